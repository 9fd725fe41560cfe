//! The second look at PyTorch's allocator events, once the report knows each stack's role and its
//! outermost Python frames: memory by role over time (at each GPU's peak, at each out-of-memory
//! error), and the program cut into segments wherever the outermost Python frames of the
//! allocating code change, from which the training steps are found (see `report::torch_steps`).
//!
//! Bounded: live blocks, one small record per segment (at most [`MAX_SEGMENTS`]), one per GPU.
//! Like `torch`, a layer above the driver: nothing here is added to the driver's totals.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{TorchAction, TorchEvent, TorchOom};

/// The roles a block can have, in the order of [`Roles`].
pub const ROLES: [&str; 7] = [
    "parameters",
    "gradients",
    "optimizer_state",
    "activations",
    "data",
    "workspaces",
    "other",
];
/// The index of "other" in [`ROLES`].
pub const OTHER: u8 = 6;
/// Segments kept; a longer run is cut into steps up to there.
pub const MAX_SEGMENTS: usize = 1 << 20;
/// Depths of outermost Python frames a segment is told apart by.
pub const DEPTHS: usize = 3;

/// Live bytes by role.
pub type Roles = [u64; ROLES.len()];

/// The outermost Python frames of a stack, outermost first (0 where the stack has fewer), each
/// as its code and line (whichever thread's frames they are).
pub type Keys = [u64; DEPTHS];

/// A stretch of events whose allocating code had the same outermost Python frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// When its first allocation happened (clock ns).
    pub t: u64,
    pub keys: Keys,
    /// Allocated bytes (all GPUs) when it began.
    pub allocated_at_start: u64,
    /// The most allocated and the most reserved during it (all GPUs).
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    /// Live bytes by role at its allocated peak, and reserved bytes then.
    pub roles_at_peak: Roles,
    pub reserved_at_peak: u64,
}

/// One GPU's picture at a moment: allocated, reserved and live bytes by role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moment {
    pub t: u64,
    pub allocated: u64,
    pub reserved: u64,
    pub roles: Roles,
}

#[derive(Debug, Default)]
struct Gpu {
    now: Moment,
    peak: Moment,
    segments: HashMap<u64, u64>,
}

/// The pass's state.
#[derive(Debug, Default)]
pub struct StepPass {
    keys: HashMap<u32, Keys>,
    roles: HashMap<u32, u8>,
    /// Live blocks: (device, address) to (size, role).
    live: HashMap<(i32, u64), (u64, u8)>,
    gpus: BTreeMap<i32, Gpu>,
    allocated: u64,
    reserved: u64,
    roles_now: Roles,
    pub segments: Vec<Segment>,
    /// Segments not kept past [`MAX_SEGMENTS`].
    pub segments_left_out: u64,
    /// Each out-of-memory error's GPU as it stood (the observer's, or the tracker's when none).
    pub ooms: Vec<(i32, Moment)>,
    tracked_ooms: Vec<(i32, Moment)>,
}

impl StepPass {
    /// `keys` and `roles` by stack id; a stack missing from `roles` is "other", from `keys` starts
    /// no segment.
    pub fn new(keys: HashMap<u32, Keys>, roles: HashMap<u32, u8>) -> StepPass {
        StepPass {
            keys,
            roles,
            ..StepPass::default()
        }
    }

    /// One allocator event.
    pub fn event(&mut self, t: u64, e: &TorchEvent) {
        let gpu = self.gpus.entry(e.device).or_default();
        gpu.now.t = t;
        match e.action {
            TorchAction::Alloc => {
                let role = self.roles.get(&e.stack).copied().unwrap_or(OTHER);
                if let Some(keys) = self.keys.get(&e.stack) {
                    let same = self.segments.last().is_some_and(|s| s.keys == *keys);
                    if !same && self.segments.len() < MAX_SEGMENTS {
                        self.segments.push(Segment {
                            t,
                            keys: *keys,
                            allocated_at_start: self.allocated,
                            peak_allocated: self.allocated,
                            peak_reserved: self.reserved,
                            roles_at_peak: self.roles_now,
                            reserved_at_peak: self.reserved,
                        });
                    } else if !same {
                        self.segments_left_out += 1;
                    }
                }
                if let Some((size, old)) = self.live.insert((e.device, e.addr), (e.size, role)) {
                    // Its free was not seen: forget it.
                    self.take(e.device, size, old);
                }
                let gpu = self.gpus.entry(e.device).or_default();
                gpu.now.allocated += e.size;
                gpu.now.roles[role as usize] += e.size;
                if gpu.now.allocated > gpu.peak.allocated {
                    gpu.peak = gpu.now;
                }
                self.allocated += e.size;
                self.roles_now[role as usize] += e.size;
            }
            TorchAction::FreeCompleted => {
                if let Some((size, role)) = self.live.remove(&(e.device, e.addr)) {
                    self.take(e.device, size, role);
                }
            }
            TorchAction::SegmentAlloc | TorchAction::SegmentMap => {
                if gpu.segments.insert(e.addr, e.size).is_none() {
                    gpu.now.reserved += e.size;
                    self.reserved += e.size;
                }
            }
            TorchAction::SegmentFree | TorchAction::SegmentUnmap => {
                let size = gpu.segments.remove(&e.addr).unwrap_or(0);
                gpu.now.reserved -= size.min(gpu.now.reserved);
                self.reserved -= size.min(self.reserved);
            }
            TorchAction::Oom => {
                let at = gpu.now;
                self.tracked_ooms.push((e.device, at));
            }
            TorchAction::FreeRequested | TorchAction::PythonExit => {}
        }
        if let Some(s) = self.segments.last_mut() {
            s.peak_reserved = s.peak_reserved.max(self.reserved);
            if self.allocated > s.peak_allocated {
                s.peak_allocated = self.allocated;
                s.roles_at_peak = self.roles_now;
                s.reserved_at_peak = self.reserved;
            }
        }
    }

    /// The observer's out-of-memory record.
    pub fn oom(&mut self, t: u64, o: &TorchOom) {
        let gpu = self.gpus.entry(o.device).or_default();
        self.ooms.push((o.device, Moment { t, ..gpu.now }));
    }

    /// Each out-of-memory error's moment: the observer's, or the tracker's when there are none
    /// (as `Torch::all_ooms` chooses).
    pub fn all_ooms(&self) -> &[(i32, Moment)] {
        if self.ooms.is_empty() {
            &self.tracked_ooms
        } else {
            &self.ooms
        }
    }

    /// Each GPU at its allocated peak (the first time it was reached).
    pub fn peaks(&self) -> impl Iterator<Item = (i32, &Moment)> + '_ {
        self.gpus.iter().map(|(&d, g)| (d, &g.peak))
    }

    /// Allocated bytes (all GPUs) now.
    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    fn take(&mut self, device: i32, size: u64, role: u8) {
        let gpu = self.gpus.entry(device).or_default();
        gpu.now.allocated -= size.min(gpu.now.allocated);
        let r = &mut gpu.now.roles[role as usize];
        *r -= size.min(*r);
        self.allocated -= size.min(self.allocated);
        let r = &mut self.roles_now[role as usize];
        *r -= size.min(*r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::torch::ev;

    #[test]
    fn segments_follow_the_outermost_frames_and_roles_are_kept_at_each_peak() {
        let keys = [(1, [10, 0, 0]), (2, [10, 0, 0]), (3, [11, 0, 0])]
            .into_iter()
            .collect();
        let roles = [(1, 0), (3, 3)].into_iter().collect();
        let mut p = StepPass::new(keys, roles);
        p.event(1, &ev(TorchAction::SegmentAlloc, 0x1000, 100, 0));
        p.event(2, &ev(TorchAction::Alloc, 0x1000, 10, 1));
        p.event(3, &ev(TorchAction::Alloc, 0x1010, 20, 2));
        p.event(4, &ev(TorchAction::Alloc, 0x1030, 30, 3));
        p.event(5, &ev(TorchAction::FreeCompleted, 0x1030, 0, 0));
        // No keys: joins the segment in progress.
        p.event(6, &ev(TorchAction::Alloc, 0x1040, 5, 9));
        p.oom(
            7,
            &TorchOom {
                device: 0,
                requested: 1000,
                device_total: 0,
                device_free: 0,
                largest_free: None,
                stack: 3,
            },
        );
        assert_eq!(p.segments.len(), 2);
        assert_eq!(p.segments[0].t, 2);
        assert_eq!(p.segments[0].peak_allocated, 30);
        assert_eq!(p.segments[1].allocated_at_start, 30);
        assert_eq!(p.segments[1].peak_allocated, 60);
        assert_eq!(p.segments[1].roles_at_peak, [10, 0, 0, 30, 0, 0, 20]);
        assert_eq!(p.segments[1].reserved_at_peak, 100);
        let (dev, peak) = p.peaks().next().expect("a GPU");
        assert_eq!((dev, peak.t, peak.allocated), (0, 4, 60));
        let (_, at) = p.all_ooms()[0];
        assert_eq!((at.allocated, at.reserved), (35, 100));
        assert_eq!(at.roles, [10, 0, 0, 0, 0, 0, 25]);
    }
}
