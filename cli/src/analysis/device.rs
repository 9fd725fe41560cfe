//! CUDA memory: live blocks of every kind (device, managed, pinned, registered, reserved address
//! space, physical and mapped virtual memory), the peak of device memory per GPU, failed calls with
//! what was live when they failed, and the caching-allocator pattern "out of memory, free a burst,
//! retry" that signals fragmentation or a peak too close to capacity.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{
    CudaApi, CudaFailure, DeviceAlloc, DeviceFree, DeviceMemory, ManagedHint, MemInfo,
};

use super::heap::Heap;

/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const CUDA_ERROR_OUT_OF_MEMORY: i32 = 2;

/// A failed call, with its context.
/// Failed calls kept, each with its stack (a program retrying in a loop fails millions of times).
pub const MAX_FAILURES: usize = 1000;

#[derive(Clone, Debug)]
pub struct Failure {
    /// When (clock ns).
    pub t: u64,
    /// What the trace recorded.
    pub call: CudaFailure,
    /// Device bytes live when it failed (all GPUs).
    pub live_device_bytes: u64,
    /// Bytes freed on the same thread before the same size was allocated again, when it was.
    pub retried_after_freeing: Option<u64>,
}

/// Per-GPU device memory.
#[derive(Clone, Debug, Default)]
pub struct PerDevice {
    /// Device bytes live now.
    pub live_bytes: u64,
    /// The most at once.
    pub peak_bytes: u64,
    /// When (clock ns).
    pub peak_t: u64,
    /// Total memory as the driver reported it (0 when never asked).
    pub total_bytes: u64,
    /// The least free memory the driver reported.
    pub min_free_bytes: Option<u64>,
    /// The most memory the driver reported in use (total - free).
    pub max_used_bytes: u64,
    /// The most the driver's "in use" exceeded what the program held on this GPU at that moment:
    /// the CUDA context, other processes, allocations memshim did not see.
    pub max_unaccounted_bytes: u64,
}

/// Upper bounds of the device allocation-size histogram (the last bucket is everything above).
pub const DEVICE_SIZE_BUCKETS: [u64; 6] =
    [1 << 20, 2 << 20, 20 << 20, 64 << 20, 256 << 20, 1 << 30];

/// The CUDA analysis state.
#[derive(Default, Debug)]
pub struct Device {
    /// One heap per kind of memory.
    pub kinds: BTreeMap<DeviceMemory, Heap>,
    /// Where each live device block is, to charge frees to the right GPU.
    owner: HashMap<(DeviceMemory, u64), (i32, u64)>,
    /// Live address ranges of every kind a copy can touch, by start: (end, kind, device ordinal).
    ranges: BTreeMap<u64, (u64, DeviceMemory, i32)>,
    /// Per GPU (device ordinal; -1 when unknown).
    pub devices: BTreeMap<i32, PerDevice>,
    /// Device bytes live on all GPUs.
    pub live_bytes: u64,
    /// Their peak.
    pub peak_bytes: u64,
    /// When (clock ns).
    pub peak_t: u64,
    /// Failed calls, in order.
    pub failures: Vec<Failure>,
    /// Failed calls past the first [`MAX_FAILURES`], counted only.
    pub failures_left_out: u64,
    pending_retry: HashMap<u32, (usize, u64)>,
    /// `cuMemGetInfo` calls seen.
    pub mem_info_calls: u64,
    /// Prefetch calls and bytes.
    pub prefetches: (u64, u64),
    /// Advise calls and bytes.
    pub advises: (u64, u64),
    /// Device allocations per size bucket (`DEVICE_SIZE_BUCKETS`, then one more for larger).
    pub size_histogram: [u64; DEVICE_SIZE_BUCKETS.len() + 1],
    /// How many device allocations there were of each size.
    pub sizes: HashMap<u64, u64>,
    /// Device bytes live over time (all GPUs).
    pub series: super::timeline::Series,
}

/// Whether a kind is a range of addresses a copy can read or write (physical handles and bare
/// reservations are not).
fn addressable(kind: DeviceMemory) -> bool {
    !matches!(kind, DeviceMemory::Physical | DeviceMemory::Reserved)
}

/// Whether a kind is memory on the GPU itself (counted for capacity).
fn on_gpu(kind: DeviceMemory) -> bool {
    matches!(kind, DeviceMemory::Device | DeviceMemory::Physical)
}

impl Device {
    /// A successful allocation.
    pub fn alloc(&mut self, t: u64, tid: u32, a: &DeviceAlloc) {
        self.kinds
            .entry(a.kind)
            .or_default()
            .alloc(t, tid, a.addr, a.size, a.stack);
        if addressable(a.kind) && a.size > 0 {
            self.ranges
                .insert(a.addr, (a.addr + a.size, a.kind, a.device));
        }
        if on_gpu(a.kind) {
            let bucket = DEVICE_SIZE_BUCKETS
                .iter()
                .position(|&b| a.size <= b)
                .unwrap_or(DEVICE_SIZE_BUCKETS.len());
            self.size_histogram[bucket] += 1;
            *self.sizes.entry(a.size).or_default() += 1;
            self.owner.insert((a.kind, a.addr), (a.device, a.size));
            self.live_bytes += a.size;
            if self.live_bytes > self.peak_bytes {
                self.peak_bytes = self.live_bytes;
                self.peak_t = t;
            }
            self.series.push(t, self.live_bytes);
            let d = self.devices.entry(a.device).or_default();
            d.live_bytes += a.size;
            if d.live_bytes > d.peak_bytes {
                d.peak_bytes = d.live_bytes;
                d.peak_t = t;
            }
            if let Some((i, freed)) = self.pending_retry.remove(&tid) {
                if self.failures[i].call.size == a.size {
                    self.failures[i].retried_after_freeing = Some(freed);
                } else {
                    self.pending_retry.insert(tid, (i, freed));
                }
            }
        }
    }

    /// A release. `cuMemFree` also frees managed memory, so a device free not found among device
    /// blocks is tried among managed ones.
    pub fn free(&mut self, t: u64, tid: u32, f: &DeviceFree) {
        let mut kind = f.kind;
        let mut freed = self.heap_free(t, kind, tid, f.addr);
        if freed == 0 && kind == DeviceMemory::Device {
            kind = DeviceMemory::Managed;
            freed = self.heap_free(t, kind, tid, f.addr);
        }
        if freed > 0 && addressable(kind) {
            self.ranges.remove(&f.addr);
        }
        if freed > 0 && on_gpu(kind) {
            if let Some((dev, size)) = self.owner.remove(&(kind, f.addr)) {
                self.live_bytes -= size;
                self.series.push(t, self.live_bytes);
                if let Some(d) = self.devices.get_mut(&dev) {
                    d.live_bytes -= size;
                }
            }
            if let Some(p) = self.pending_retry.get_mut(&tid) {
                p.1 += freed;
            }
        }
    }

    fn heap_free(&mut self, t: u64, kind: DeviceMemory, tid: u32, addr: u64) -> u64 {
        self.kinds
            .get_mut(&kind)
            .map_or(0, |h| h.free(t, tid, addr, false))
    }

    /// A failed call.
    pub fn failure(&mut self, t: u64, tid: u32, f: CudaFailure) {
        if self.failures.len() >= MAX_FAILURES {
            self.failures_left_out += 1;
            return;
        }
        let oom = f.result == CUDA_ERROR_OUT_OF_MEMORY && f.size > 0;
        self.failures.push(Failure {
            t,
            call: f,
            live_device_bytes: self.live_bytes,
            retried_after_freeing: None,
        });
        if oom {
            self.pending_retry.insert(tid, (self.failures.len() - 1, 0));
        }
    }

    /// A `cuMemGetInfo` answer.
    pub fn mem_info(&mut self, m: &MemInfo) {
        self.mem_info_calls += 1;
        let d = self.devices.entry(m.device).or_default();
        d.total_bytes = m.total;
        d.min_free_bytes = Some(d.min_free_bytes.map_or(m.free, |f| f.min(m.free)));
        let used = m.total.saturating_sub(m.free);
        d.max_used_bytes = d.max_used_bytes.max(used);
        d.max_unaccounted_bytes = d
            .max_unaccounted_bytes
            .max(used.saturating_sub(d.live_bytes));
    }

    /// A prefetch or advice.
    pub fn hint(&mut self, h: &ManagedHint) {
        let slot = if h.api == CudaApi::MemPrefetchAsync {
            &mut self.prefetches
        } else {
            &mut self.advises
        };
        slot.0 += 1;
        slot.1 += h.size;
    }

    /// The kind of live CUDA memory `addr` lies in, or `None` for memory CUDA does not know
    /// (pageable host memory).
    pub fn classify(&self, addr: u64) -> Option<DeviceMemory> {
        self.placed(addr).map(|(kind, _)| kind)
    }

    /// The kind of CUDA memory at `addr` and the device it was allocated on (-1 when unknown).
    pub fn placed(&self, addr: u64) -> Option<(DeviceMemory, i32)> {
        let (_, &(end, kind, device)) = self.ranges.range(..=addr).next_back()?;
        (addr < end).then_some((kind, device))
    }

    /// True when the trace holds any CUDA memory event.
    pub fn seen(&self) -> bool {
        !self.kinds.is_empty() || !self.failures.is_empty() || self.mem_info_calls > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(d: &mut Device, t: u64, kind: DeviceMemory, addr: u64, size: u64, dev: i32) {
        d.alloc(
            t,
            1,
            &DeviceAlloc {
                api: CudaApi::MemAlloc,
                kind,
                addr,
                size,
                device: dev,
                stack: 1,
            },
        );
    }

    fn free(d: &mut Device, kind: DeviceMemory, addr: u64) {
        d.free(
            0,
            1,
            &DeviceFree {
                api: CudaApi::MemFree,
                kind,
                addr,
            },
        );
    }

    #[test]
    fn oom_then_flush_then_retry_is_recognised() {
        let mut d = Device::default();
        alloc(&mut d, 1, DeviceMemory::Device, 0x1000, 40 << 20, 0);
        d.failure(
            2,
            1,
            CudaFailure {
                api: CudaApi::MemAlloc,
                size: 32 << 20,
                result: CUDA_ERROR_OUT_OF_MEMORY,
                device: 0,
                stack: 2,
            },
        );
        free(&mut d, DeviceMemory::Device, 0x1000);
        alloc(&mut d, 3, DeviceMemory::Device, 0x2000, 32 << 20, 0);
        assert_eq!(d.failures.len(), 1);
        assert_eq!(d.failures[0].live_device_bytes, 40 << 20);
        assert_eq!(d.failures[0].retried_after_freeing, Some(40 << 20));
        assert_eq!(d.peak_bytes, 40 << 20);
        assert_eq!(d.devices[&0].live_bytes, 32 << 20);
    }

    #[test]
    fn driver_in_use_beyond_the_program_is_unaccounted() {
        let mut d = Device::default();
        alloc(&mut d, 1, DeviceMemory::Device, 0x1000, 100 << 20, 0);
        d.mem_info(&MemInfo {
            device: 0,
            free: 1000 << 20,
            total: 1600 << 20,
        });
        assert_eq!(d.devices[&0].max_used_bytes, 600 << 20);
        assert_eq!(d.devices[&0].max_unaccounted_bytes, 500 << 20);
        assert_eq!(d.size_histogram, [0, 0, 0, 0, 1, 0, 0]);
    }

    #[test]
    fn cu_mem_free_of_managed_memory_frees_it() {
        let mut d = Device::default();
        alloc(&mut d, 1, DeviceMemory::Managed, 0x5000, 4096, 0);
        free(&mut d, DeviceMemory::Device, 0x5000);
        assert_eq!(d.kinds[&DeviceMemory::Managed].live_bytes, 0);
        assert_eq!(
            d.live_bytes, 0,
            "managed memory is not counted as device capacity"
        );
    }
}
