//! Unit tests of the transfers analysis: classification by direction and host memory, GPU times
//! joined to their copies, peer copies.
use super::*;
use memshim_trace::{CudaApi, DeviceAlloc};

fn alloc(d: &mut Device, kind: DeviceMemory, addr: u64, size: u64) {
    d.alloc(
        0,
        1,
        &DeviceAlloc {
            api: CudaApi::MemAlloc,
            kind,
            addr,
            size,
            device: 0,
            stack: 0,
        },
    );
}

fn copy(api: CopyApi, dst: u64, src: u64, size: u64, ns: u64) -> Transfer {
    Transfer {
        api,
        dst,
        src,
        size,
        stream: 0,
        duration_ns: ns,
        result: 0,
        device: 0,
        stack: 1,
    }
}

#[test]
fn host_side_is_classified_from_cuda_allocations() {
    let mut d = Device::default();
    alloc(&mut d, DeviceMemory::Device, 0x10_0000, 0x1000);
    alloc(&mut d, DeviceMemory::PinnedHost, 0x20_0000, 0x1000);
    let mut t = Transfers::default();
    let mut h = Heap::default();
    h.alloc(0, 1, 0x30_0000, 100, 3);
    let run = |t: &mut Transfers, h: &mut Heap, api, dst, src, size, ns| {
        t.copy(0, 1, &copy(api, dst, src, size, ns), &d, h);
    };
    run(
        &mut t,
        &mut h,
        CopyApi::MemcpyHtoD,
        0x10_0000,
        0x20_0800,
        100,
        10,
    );
    run(
        &mut t,
        &mut h,
        CopyApi::MemcpyHtoDAsync,
        0x10_0000,
        0x30_0000,
        100,
        500,
    );
    run(&mut t, &mut h, CopyApi::Memcpy, 0x30_0000, 0x10_0010, 50, 7);
    run(&mut t, &mut h, CopyApi::Memcpy, 0x10_0000, 0x10_0800, 50, 7);
    // The same address, freed and allocated again, is another buffer.
    h.free(0, 1, 0x30_0000, false);
    h.alloc(0, 1, 0x30_0000, 100, 3);
    run(
        &mut t,
        &mut h,
        CopyApi::MemcpyHtoD,
        0x10_0000,
        0x30_0000,
        100,
        10,
    );
    assert_eq!(t.repeated.len(), 2);
    assert!(t.repeated.values().all(|&n| n == 1));
    let k = |dir, host| t.by_kind.get(&(dir, host)).cloned().unwrap_or_default();
    assert_eq!(k(Direction::HtoD, HostMemory::Pinned).sync_count, 1);
    let pageable = k(Direction::HtoD, HostMemory::Pageable);
    assert_eq!((pageable.async_count, pageable.async_blocked_ns), (1, 500));
    assert_eq!(pageable.sync_count, 1);
    assert_eq!(k(Direction::DtoH, HostMemory::Pageable).bytes, 50);
    assert_eq!(k(Direction::DtoD, HostMemory::Device).count, 1);
    assert_eq!(t.histogram, [2, 3, 0, 0, 0, 0]);
}

#[test]
fn copies_between_allocations_on_two_gpus_are_peer_copies() {
    let mut d = Device::default();
    alloc(&mut d, DeviceMemory::Device, 0x10_0000, 0x1000);
    d.alloc(
        0,
        1,
        &DeviceAlloc {
            api: CudaApi::MemAlloc,
            kind: DeviceMemory::Device,
            addr: 0x40_0000,
            size: 0x1000,
            device: 1,
            stack: 0,
        },
    );
    let (mut t, mut h) = (Transfers::default(), Heap::default());
    for api in [CopyApi::MemcpyAsync, CopyApi::MemcpyDtoD] {
        t.copy(0, 1, &copy(api, 0x40_0000, 0x10_0000, 64, 1), &d, &mut h);
    }
    t.copy(
        0,
        1,
        &copy(CopyApi::Memcpy, 0x10_0800, 0x10_0000, 64, 1),
        &d,
        &mut h,
    );
    assert_eq!(t.by_kind[&(Direction::Peer, HostMemory::Device)].count, 2);
    assert_eq!(t.by_kind[&(Direction::DtoD, HostMemory::Device)].count, 1);
}

#[test]
fn gpu_times_join_their_copies_by_timer() {
    let mut d = Device::default();
    alloc(&mut d, DeviceMemory::Device, 0x10_0000, 0x1000);
    alloc(&mut d, DeviceMemory::PinnedHost, 0x20_0000, 0x1000);
    let mut h = Heap::default();
    let mut t = Transfers::default();
    let c = copy(CopyApi::MemcpyHtoDAsync, 0x10_0000, 0x20_0000, 4096, 100);
    t.timed_copy(5, 1, &c, 7, &d, &mut h);
    t.timed_copy(6, 1, &c, 8, &d, &mut h);
    // A time for a copy never seen (dropped), and one that comes twice, change nothing.
    t.copy_time(&CopyTime {
        timer: 99,
        gpu_ns: 1,
    });
    t.copy_time(&CopyTime {
        timer: 7,
        gpu_ns: 256,
    });
    t.copy_time(&CopyTime {
        timer: 7,
        gpu_ns: 256,
    });
    let k = &t.by_kind[&(Direction::HtoD, HostMemory::Pinned)];
    assert_eq!((k.count, k.async_count, k.async_blocked_ns), (2, 2, 200));
    assert_eq!(
        (k.gpu_timed_count, k.gpu_timed_bytes, k.gpu_ns),
        (1, 4096, 256)
    );
    assert_eq!(
        t.by_site[&(Direction::HtoD, HostMemory::Pinned, 1)].gpu_ns,
        256
    );
    assert_eq!(t.timeline[0].1, 256, "the timeline shows the GPU time");
    assert_eq!(t.timeline[1].1, 100, "still in flight: the call's time");
}

#[test]
fn a_site_that_copies_a_batch_and_its_labels_counts_its_small_copies() {
    // One line uploads a 2 MiB batch and its 2 KiB labels each step: large on average, and yet it
    // makes every small copy of the run.
    let mut d = Device::default();
    alloc(&mut d, DeviceMemory::Device, 0x1000_0000, 4 << 20);
    let mut t = Transfers::default();
    let mut h = Heap::default();
    for _ in 0..3 {
        for size in [2 << 20, 2 << 10] {
            let c = copy(CopyApi::MemcpyHtoDAsync, 0x1000_0000, 0x50_0000, size, 5);
            t.copy(0, 1, &c, &d, &mut h);
        }
    }
    // Exactly at the bound is small; one byte over is not.
    for size in [SMALL_COPY, SMALL_COPY + 1] {
        let c = copy(CopyApi::MemcpyHtoDAsync, 0x1000_0000, 0x50_0000, size, 5);
        t.copy(0, 1, &c, &d, &mut h);
    }
    let site = &t.by_site[&(Direction::HtoD, HostMemory::Pageable, 1)];
    assert_eq!((site.count, site.small_count), (8, 4));
    let mut twice = site.clone();
    twice.absorb(site);
    assert_eq!(twice.small_count, 8);
}
