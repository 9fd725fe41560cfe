//! PyTorch's caching allocator from the inside: per GPU, the live blocks (allocated) inside the
//! reserved segments, over time; which sites held the memory at the end, at the peak and at each
//! out-of-memory error; and when each site's memory grew and was given back.
//!
//! A layer above the driver, never beside it: reserved memory is the allocator's segments (which the
//! driver analysis also counts, as device allocations), allocated memory is the live blocks inside
//! them. Nothing here is added to the driver's totals.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{TorchAction, TorchEvent, TorchOom, TorchState};

use super::heap::Heap;
use super::timeline::Series;
use super::{SiteStats, SiteTable};

/// One GPU as the allocator saw it.
#[derive(Debug, Default)]
pub struct TorchDevice {
    /// Live blocks: a tensor's storage each.
    pub blocks: Heap,
    /// Live segments (and, with expandable segments, mapped ranges) by address: their sizes.
    segments: HashMap<u64, u64>,
    /// Bytes reserved now.
    pub reserved: u64,
    /// The most reserved at once, and when.
    pub reserved_peak: (u64, u64),
    /// Reserved bytes over time.
    pub reserved_series: Series,
    /// Per site: its highest live bytes, when, and when it fell below half of that afterwards.
    pub releases: HashMap<u32, Release>,
    /// True once the allocator mapped memory into an expandable segment (it runs with
    /// `expandable_segments:True`, which the trace learns from its events, never from the
    /// environment).
    pub expandable: bool,
}

/// A site's high and its giving back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Release {
    pub peak: u64,
    pub peak_t: u64,
    /// When its live bytes first fell below half of the peak after it (the last high).
    pub released_t: Option<u64>,
}

/// An out-of-memory error, with what was held when it was raised.
#[derive(Clone, Debug)]
pub struct OomAt {
    pub t: u64,
    /// The allocator's figures.
    pub oom: TorchOom,
    /// Live block bytes and reserved bytes on that GPU then.
    pub allocated: u64,
    pub reserved: u64,
    /// What each site held then (live bytes and blocks; sites holding nothing are left out).
    pub holders: SiteTable,
    /// The allocator used expandable segments on that GPU by then.
    pub expandable: bool,
}

/// The analysis state.
#[derive(Debug, Default)]
pub struct Torch {
    /// What the shim decided, when it got that far.
    pub state: Option<TorchState>,
    /// Per GPU (CUDA ordinal).
    pub devices: BTreeMap<i32, TorchDevice>,
    /// Out-of-memory errors, from the observer (with the allocator's figures).
    pub ooms: Vec<OomAt>,
    /// Out-of-memory errors the trace tracker reported, used when no observer record exists.
    tracked_ooms: Vec<OomAt>,
    /// What was held when the Python interpreter began to shut down: the program's end, before
    /// the teardown of its globals freed the tensors they held.
    pub at_exit: Option<AtExit>,
}

/// The allocator's state when the interpreter began to shut down.
#[derive(Clone, Debug, Default)]
pub struct AtExit {
    pub t: u64,
    /// Per GPU: (allocated, reserved).
    pub devices: BTreeMap<i32, (u64, u64)>,
    /// What each site held (all GPUs).
    pub holders: SiteTable,
}

impl Torch {
    /// One allocator event.
    pub fn event(&mut self, t: u64, tid: u32, e: &TorchEvent) {
        if e.action == TorchAction::PythonExit {
            if self.at_exit.is_none() {
                self.at_exit = Some(self.snapshot(t));
            }
            return;
        }
        let d = self.devices.entry(e.device).or_default();
        match e.action {
            TorchAction::Alloc => {
                d.blocks.alloc(t, tid, e.addr, e.size, e.stack);
                let live = d.blocks.sites().get(&e.stack).map_or(0, |s| s.live_bytes);
                let r = d.releases.entry(e.stack).or_default();
                if live > r.peak {
                    *r = Release {
                        peak: live,
                        peak_t: t,
                        released_t: None,
                    };
                }
            }
            TorchAction::FreeCompleted => {
                let stack = d.blocks.block_stack(e.addr);
                d.blocks.free(t, tid, e.addr, false);
                if let Some(stack) = stack {
                    let live = d.blocks.sites().get(&stack).map_or(0, |s| s.live_bytes);
                    if let Some(r) = d.releases.get_mut(&stack) {
                        if r.released_t.is_none() && live * 2 < r.peak {
                            r.released_t = Some(t);
                        }
                    }
                }
            }
            TorchAction::FreeRequested | TorchAction::PythonExit => {}
            TorchAction::SegmentAlloc | TorchAction::SegmentMap => {
                d.expandable |= e.action == TorchAction::SegmentMap;
                if d.segments.insert(e.addr, e.size).is_none() {
                    d.reserved += e.size;
                }
                if d.reserved > d.reserved_peak.0 {
                    d.reserved_peak = (d.reserved, t);
                }
                d.reserved_series.push(t, d.reserved);
            }
            TorchAction::SegmentFree | TorchAction::SegmentUnmap => {
                let size = d.segments.remove(&e.addr).unwrap_or(0);
                d.reserved -= size.min(d.reserved);
                d.reserved_series.push(t, d.reserved);
            }
            TorchAction::Oom => {
                let oom = TorchOom {
                    device: e.device,
                    requested: e.size,
                    device_total: 0,
                    device_free: e.addr,
                    largest_free: None,
                    stack: e.stack,
                };
                let at = oom_at(t, oom, d);
                self.tracked_ooms.push(at);
            }
        }
    }

    /// The observer's out-of-memory record.
    pub fn oom(&mut self, t: u64, oom: TorchOom) {
        let d = self.devices.entry(oom.device).or_default();
        let at = oom_at(t, oom, d);
        self.ooms.push(at);
    }

    fn snapshot(&self, t: u64) -> AtExit {
        let mut holders = SiteTable::default();
        for d in self.devices.values() {
            for (id, s) in held(&d.blocks).iter() {
                holders.get_or_default(id).absorb(s);
            }
        }
        AtExit {
            t,
            devices: self
                .devices
                .iter()
                .map(|(&id, d)| (id, (d.blocks.live_bytes, d.reserved)))
                .collect(),
            holders,
        }
    }

    /// Every out-of-memory error: the observer's, or the tracker's when there are none.
    pub fn all_ooms(&self) -> &[OomAt] {
        if self.ooms.is_empty() {
            &self.tracked_ooms
        } else {
            &self.ooms
        }
    }
}

/// What each site of `blocks` holds now (sites holding nothing left out).
fn held(blocks: &Heap) -> SiteTable {
    blocks
        .sites()
        .iter()
        .filter(|(_, s)| s.live_bytes > 0)
        .map(|(id, s)| {
            let held = SiteStats {
                live_bytes: s.live_bytes,
                live_count: s.live_count,
                allocations: s.allocations,
                allocated_bytes: s.allocated_bytes,
                ..SiteStats::default()
            };
            (id, held)
        })
        .collect()
}

fn oom_at(t: u64, oom: TorchOom, d: &TorchDevice) -> OomAt {
    let holders = held(&d.blocks);
    OomAt {
        t,
        oom,
        allocated: d.blocks.live_bytes,
        reserved: d.reserved,
        holders,
        expandable: d.expandable,
    }
}

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The cache held enough free bytes for the request, but no free block large enough.
    Fragmentation,
    /// The live tensors and the request do not fit the GPU.
    Capacity,
}

/// The verdict on an out-of-memory error: fragmentation when the cache's free space (reserved less
/// allocated) would have covered the request but its largest free block (when known) would not.
pub fn verdict(o: &OomAt) -> Verdict {
    let cache_free = o.reserved.saturating_sub(o.allocated);
    let no_block = o.oom.largest_free.is_none_or(|l| l < o.oom.requested);
    if cache_free >= o.oom.requested && no_block {
        Verdict::Fragmentation
    } else {
        Verdict::Capacity
    }
}

/// An allocator event on device 0, stream 0, for the tests of this module and `torch_steps`.
#[cfg(test)]
pub(crate) fn ev(action: TorchAction, addr: u64, size: u64, stack: u32) -> TorchEvent {
    TorchEvent {
        action,
        device: 0,
        addr,
        size,
        stream: 0,
        stack,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_inside_segments_and_a_release_dated() {
        let mut t = Torch::default();
        t.event(
            1,
            9,
            &ev(TorchAction::SegmentAlloc, 0x1000_0000, 20 << 20, 1),
        );
        for i in 0..4 {
            t.event(
                10 + i,
                9,
                &ev(TorchAction::Alloc, 0x1000_0000 + i * (2 << 20), 2 << 20, 5),
            );
        }
        t.event(20, 9, &ev(TorchAction::Alloc, 0x1080_0000, 512, 6));
        let d = &t.devices[&0];
        assert_eq!(
            (d.blocks.live_bytes, d.reserved),
            ((8 << 20) + 512, 20 << 20)
        );
        assert_eq!(d.releases[&5].peak, 8 << 20);
        // Free requested is not free yet; completed is.
        t.event(
            30,
            9,
            &ev(TorchAction::FreeRequested, 0x1000_0000, 2 << 20, 0),
        );
        assert_eq!(t.devices[&0].blocks.live_bytes, (8 << 20) + 512);
        for i in 0..3 {
            t.event(
                31 + i,
                9,
                &ev(
                    TorchAction::FreeCompleted,
                    0x1000_0000 + i * (2 << 20),
                    2 << 20,
                    0,
                ),
            );
        }
        let d = &t.devices[&0];
        assert_eq!(d.blocks.live_bytes, (2 << 20) + 512);
        // 6 MiB, then 4 MiB (half, not below it), then 2 MiB left: released at the third free.
        assert_eq!(d.releases[&5].released_t, Some(33));
        t.event(
            40,
            9,
            &ev(TorchAction::SegmentFree, 0x1000_0000, 20 << 20, 0),
        );
        assert_eq!(t.devices[&0].reserved, 0);
        assert_eq!(t.devices[&0].reserved_peak, (20 << 20, 1));
        assert!(
            !t.devices[&0].expandable,
            "whole segments: the native allocator's"
        );
    }

    #[test]
    fn expandable_segments_reserve_by_mapping_and_python_exit_keeps_what_was_held() {
        let mut t = Torch::default();
        // One growing segment: 2 MiB pages mapped and unmapped at its end.
        t.event(1, 9, &ev(TorchAction::SegmentMap, 0x2000_0000, 4 << 20, 1));
        t.event(2, 9, &ev(TorchAction::Alloc, 0x2000_0000, 3 << 20, 5));
        t.event(3, 9, &ev(TorchAction::SegmentMap, 0x2040_0000, 2 << 20, 1));
        t.event(4, 9, &ev(TorchAction::Alloc, 0x2040_0000, 2 << 20, 6));
        t.event(
            5,
            9,
            &ev(TorchAction::FreeCompleted, 0x2040_0000, 2 << 20, 0),
        );
        t.event(
            6,
            9,
            &ev(TorchAction::SegmentUnmap, 0x2040_0000, 2 << 20, 0),
        );
        let d = &t.devices[&0];
        assert_eq!((d.reserved, d.reserved_peak), (4 << 20, (6 << 20, 3)));
        assert!(d.expandable, "a mapped range is an expandable segment's");
        t.event(7, 9, &ev(TorchAction::PythonExit, 0, 0, 0));
        t.event(
            8,
            9,
            &ev(TorchAction::FreeCompleted, 0x2000_0000, 3 << 20, 0),
        );
        t.event(9, 9, &ev(TorchAction::PythonExit, 0, 0, 0));
        let at = t.at_exit.as_ref().expect("the exit was marked");
        assert_eq!(at.t, 7, "the first mark counts");
        assert_eq!(at.devices[&0], (3 << 20, 4 << 20));
        assert_eq!(at.holders[&5].live_bytes, 3 << 20);
        assert!(!at.holders.contains_key(&6));
        assert_eq!(t.devices[&0].blocks.live_bytes, 0);
    }

    #[test]
    fn verdict_tells_fragmentation_from_capacity() {
        let mut t = Torch::default();
        t.event(
            1,
            9,
            &ev(TorchAction::SegmentAlloc, 0x1000_0000, 64 << 20, 1),
        );
        t.event(2, 9, &ev(TorchAction::Alloc, 0x1000_0000, 16 << 20, 5));
        let oom = |largest| TorchOom {
            device: 0,
            requested: 32 << 20,
            device_total: 80 << 20,
            device_free: 16 << 20,
            largest_free: largest,
            stack: 3,
        };
        t.oom(3, oom(Some(24 << 20)));
        t.oom(4, oom(Some(40 << 20)));
        t.event(5, 9, &ev(TorchAction::Alloc, 0x1100_0000, 40 << 20, 5));
        t.oom(6, oom(None));
        let o = t.all_ooms();
        assert_eq!((o[0].allocated, o[0].reserved), (16 << 20, 64 << 20));
        assert_eq!(o[0].holders[&5].live_bytes, 16 << 20);
        assert_eq!(verdict(&o[0]), Verdict::Fragmentation);
        // A free block that fits means the failure was not the cache's layout.
        assert_eq!(verdict(&o[1]), Verdict::Capacity);
        // 56 MiB live of 64 reserved: 8 MiB free cannot hold 32.
        assert_eq!(verdict(&o[2]), Verdict::Capacity);
    }
}
