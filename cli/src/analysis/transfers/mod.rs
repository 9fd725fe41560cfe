//! Transfers: every recorded copy by direction and by the kind of host memory on its host side, with
//! bytes, time and bandwidth, by call site; the size histogram; and the host buffers copied again and
//! again. The host side's kind comes from the CUDA allocations seen so far (pinned, registered,
//! managed); memory CUDA did not allocate or register is pageable.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{CopyApi, CopyTime, DeviceMemory, Transfer};

use super::device::Device;
use super::heap::Heap;

/// Copy direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
    /// Device to device across GPUs (`cuMemcpyPeer*`).
    Peer,
    /// `cuMemset*`: no source; the "host memory" is the kind of memory set.
    Memset,
}

/// The kind of host memory a copy used ("device" for device-to-device copies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostMemory {
    Pageable,
    Pinned,
    Registered,
    Managed,
    Device,
}

/// Totals of one group of copies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Copies.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Synchronous copies, their bytes and their time (the transfer time).
    pub sync_count: u64,
    pub sync_bytes: u64,
    pub sync_ns: u64,
    /// Asynchronous copies and how long their calls blocked the caller.
    pub async_count: u64,
    pub async_blocked_ns: u64,
    /// Asynchronous copies timed on the GPU with events, their bytes and their GPU time.
    pub gpu_timed_count: u64,
    pub gpu_timed_bytes: u64,
    pub gpu_ns: u64,
    /// Copies of at most [`SMALL_COPY`] bytes: a line that copies a large and a small tensor (a
    /// batch and its labels) is a small-copy site even though its copies are large on average.
    pub small_count: u64,
}

impl Totals {
    /// Adds another group's totals (the same Python location reached by another stack).
    pub fn absorb(&mut self, o: &Totals) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.sync_count += o.sync_count;
        self.sync_bytes += o.sync_bytes;
        self.sync_ns += o.sync_ns;
        self.async_count += o.async_count;
        self.async_blocked_ns += o.async_blocked_ns;
        self.gpu_timed_count += o.gpu_timed_count;
        self.gpu_timed_bytes += o.gpu_timed_bytes;
        self.gpu_ns += o.gpu_ns;
        self.small_count += o.small_count;
    }

    fn add_gpu_time(&mut self, bytes: u64, ns: u64) {
        self.gpu_timed_count += 1;
        self.gpu_timed_bytes += bytes;
        self.gpu_ns += ns;
    }

    fn add(&mut self, c: &Transfer) {
        self.count += 1;
        self.bytes += c.size;
        self.small_count += u64::from(c.size <= SMALL_COPY);
        if c.api.is_async() {
            self.async_count += 1;
            self.async_blocked_ns += c.duration_ns;
        } else {
            self.sync_count += 1;
            self.sync_bytes += c.size;
            self.sync_ns += c.duration_ns;
        }
    }
}

/// Upper bounds of the size histogram's buckets (the last bucket is everything above).
pub const SIZE_BUCKETS: [u64; 5] = [64, SMALL_COPY, 64 << 10, 1 << 20, 16 << 20];

/// Copies at most this big are "small": their fixed cost outweighs their bytes.
pub const SMALL_COPY: u64 = 4 << 10;

/// The transfers analysis state.
#[derive(Default, Debug)]
pub struct Transfers {
    /// By (direction, host memory).
    pub by_kind: BTreeMap<(Direction, HostMemory), Totals>,
    /// By (direction, host memory, stack).
    pub by_site: HashMap<(Direction, HostMemory, u32), Totals>,
    /// Copies per size bucket (`SIZE_BUCKETS`, then one more for larger).
    pub histogram: [u64; SIZE_BUCKETS.len() + 1],
    /// Host-to-device copies from pageable heap blocks, per (address, size, block identity): the same
    /// block copied again and again (a new block at a reused address is a different key).
    pub repeated: HashMap<(u64, u64, u64), u64>,
    /// Copies that failed.
    pub failed: u64,
    /// The first copies, for timelines: (start ns, duration ns, thread, direction, host memory,
    /// bytes); an event-timed copy's duration is its GPU time once known.
    pub timeline: Vec<(u64, u64, u32, Direction, HostMemory, u64)>,
    /// Event-timed copies whose GPU time has not come yet, by timer.
    in_flight: HashMap<u32, InFlight>,
}

/// What a GPU time, when it comes, is added to.
#[derive(Debug)]
struct InFlight {
    dir: Direction,
    host: HostMemory,
    stack: u32,
    bytes: u64,
    timeline: Option<usize>,
}

/// Copies kept for timelines.
pub const TIMELINE_COPIES: usize = 20_000;

impl Transfers {
    /// A copy; `device` knows which addresses are CUDA memory at this moment, `heap` which host
    /// blocks are live.
    pub fn copy(&mut self, t: u64, tid: u32, c: &Transfer, device: &Device, heap: &mut Heap) {
        self.record(t, tid, c, device, heap);
    }

    /// A copy timed on the GPU: its time comes later, in a [`CopyTime`] with the same timer.
    pub fn timed_copy(
        &mut self,
        t: u64,
        tid: u32,
        c: &Transfer,
        timer: u32,
        device: &Device,
        heap: &mut Heap,
    ) {
        if let Some((dir, host, timeline)) = self.record(t, tid, c, device, heap) {
            self.in_flight.insert(
                timer,
                InFlight {
                    dir,
                    host,
                    stack: c.stack,
                    bytes: c.size,
                    timeline,
                },
            );
        }
    }

    /// The GPU time of an event-timed copy. One whose copy is unknown (lost with dropped events)
    /// is ignored.
    pub fn copy_time(&mut self, ct: &CopyTime) {
        let Some(f) = self.in_flight.remove(&ct.timer) else {
            return;
        };
        self.by_kind
            .entry((f.dir, f.host))
            .or_default()
            .add_gpu_time(f.bytes, ct.gpu_ns);
        self.by_site
            .entry((f.dir, f.host, f.stack))
            .or_default()
            .add_gpu_time(f.bytes, ct.gpu_ns);
        if let Some(entry) = f.timeline.and_then(|i| self.timeline.get_mut(i)) {
            entry.1 = ct.gpu_ns;
        }
    }

    /// Counts a copy; for a successful one, its class and its place on the timeline.
    fn record(
        &mut self,
        t: u64,
        tid: u32,
        c: &Transfer,
        device: &Device,
        heap: &mut Heap,
    ) -> Option<(Direction, HostMemory, Option<usize>)> {
        if c.result != 0 {
            self.failed += 1;
            return None;
        }
        let (dir, host) = classify(c, device);
        let timeline = (self.timeline.len() < TIMELINE_COPIES).then(|| {
            self.timeline
                .push((t, c.duration_ns, tid, dir, host, c.size));
            self.timeline.len() - 1
        });
        self.by_kind.entry((dir, host)).or_default().add(c);
        self.by_site.entry((dir, host, c.stack)).or_default().add(c);
        let bucket = SIZE_BUCKETS
            .iter()
            .position(|&b| c.size <= b)
            .unwrap_or(SIZE_BUCKETS.len());
        self.histogram[bucket] += 1;
        if dir == Direction::HtoD && host == HostMemory::Pageable {
            if let Some(block) = heap.block_identity(c.src) {
                *self.repeated.entry((c.src, c.size, block)).or_default() += 1;
            }
        }
        Some((dir, host, timeline))
    }
}

fn host_kind(k: Option<DeviceMemory>) -> HostMemory {
    match k {
        None => HostMemory::Pageable,
        Some(DeviceMemory::PinnedHost) => HostMemory::Pinned,
        Some(DeviceMemory::Registered) => HostMemory::Registered,
        Some(DeviceMemory::Managed) => HostMemory::Managed,
        Some(_) => HostMemory::Device,
    }
}

fn on_device(k: Option<DeviceMemory>) -> bool {
    matches!(k, Some(DeviceMemory::Device | DeviceMemory::Mapped))
}

/// A copy between device allocations: across GPUs (as PyTorch's `tensor.to("cuda:1")` makes with
/// unified addressing) when both sides' devices are known and differ.
fn device_to_device(c: &Transfer, device: &Device) -> (Direction, HostMemory) {
    let gpu = |a| device.placed(a).map(|(_, d)| d).filter(|&d| d >= 0);
    match (gpu(c.src), gpu(c.dst)) {
        (Some(s), Some(d)) if s != d => (Direction::Peer, HostMemory::Device),
        _ => (Direction::DtoD, HostMemory::Device),
    }
}

/// Direction and host memory of a copy.
fn classify(c: &Transfer, device: &Device) -> (Direction, HostMemory) {
    match c.api {
        CopyApi::MemcpyHtoD | CopyApi::MemcpyHtoDAsync => {
            (Direction::HtoD, host_kind(device.classify(c.src)))
        }
        CopyApi::MemcpyDtoH | CopyApi::MemcpyDtoHAsync => {
            (Direction::DtoH, host_kind(device.classify(c.dst)))
        }
        CopyApi::MemcpyDtoD | CopyApi::MemcpyDtoDAsync => device_to_device(c, device),
        CopyApi::MemcpyPeer | CopyApi::MemcpyPeerAsync => (Direction::Peer, HostMemory::Device),
        CopyApi::Memset | CopyApi::MemsetAsync => {
            let k = device.classify(c.dst);
            let kind = if on_device(k) {
                HostMemory::Device
            } else {
                host_kind(k)
            };
            (Direction::Memset, kind)
        }
        CopyApi::Memcpy | CopyApi::MemcpyAsync => {
            let (s, d) = (device.classify(c.src), device.classify(c.dst));
            match (on_device(s), on_device(d)) {
                (true, true) => device_to_device(c, device),
                (false, true) => (Direction::HtoD, host_kind(s)),
                (true, false) => (Direction::DtoH, host_kind(d)),
                // Host to host: name the side CUDA knows, if either.
                (false, false) => (Direction::HtoH, host_kind(s.or(d))),
            }
        }
    }
}

#[cfg(test)]
mod tests;
