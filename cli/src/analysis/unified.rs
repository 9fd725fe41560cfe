//! Unified memory as CUPTI counted it (`MEMSHIM_CUPTI=1`): bytes migrated each way, page faults,
//! thrashing and throttling, in all and per managed allocation site. CUPTI hands its records back up
//! to a second late, often after the memory was freed, so an address is matched to the latest
//! managed allocation that covered it, freed or not (managed allocations are few and large).
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{CuptiState, DeviceAlloc, DeviceMemory, UmCounter};

/// CUPTI's counter kinds, as indexes into [`UmTotals`].
pub const HTOD: usize = 1;
pub const DTOH: usize = 2;
pub const CPU_PAGE_FAULTS: usize = 3;
pub const GPU_PAGE_FAULTS: usize = 4;
pub const THRASHING: usize = 5;
pub const THROTTLING: usize = 6;
pub const REMOTE_MAPS: usize = 7;
pub const DTOD: usize = 8;

/// Values by counter kind (index 0 unused; kinds CUPTI may add later are ignored).
pub type UmTotals = [u64; 9];

/// The unified-memory analysis state.
#[derive(Default, Debug)]
pub struct Unified {
    /// The shim's word on CUPTI; `None` when it was not asked for.
    pub state: Option<CuptiState>,
    /// When the counters were enabled (clock ns): activity before is not counted.
    pub since: u64,
    pub totals: UmTotals,
    /// By the stack of the managed allocation the activity hit.
    pub by_stack: HashMap<u32, UmTotals>,
    /// Activity at addresses no managed allocation ever held (memory memshim did not see allocated).
    pub unattributed: UmTotals,
    /// Every managed allocation by start: (end, stack); a later one at the same start replaces it.
    managed: BTreeMap<u64, (u64, u32)>,
    /// Managed bytes allocated before the counters started (clock ns of the first such
    /// allocation, and the bytes): what moved of them then was not counted.
    pub unwatched: Option<(u64, u64)>,
}

impl Unified {
    /// Remembers a managed allocation, for activity that comes after it.
    pub fn alloc(&mut self, t: u64, a: &DeviceAlloc) {
        if a.kind == DeviceMemory::Managed && a.size > 0 {
            let watched = self.state.as_ref().is_some_and(|s| s.enabled);
            if !watched {
                let (first, bytes) = self.unwatched.get_or_insert((t, 0));
                *first = (*first).min(t);
                *bytes += a.size;
            }
            self.managed.insert(a.addr, (a.addr + a.size, a.stack));
        }
    }

    pub fn add(&mut self, counters: &[UmCounter]) {
        for c in counters {
            let k = c.kind as usize;
            if k >= self.totals.len() {
                continue;
            }
            self.totals[k] += c.value;
            let stack = self
                .managed
                .range(..=c.address)
                .next_back()
                .filter(|(_, &(end, _))| c.address < end)
                .map(|(_, &(_, stack))| stack);
            let site = match stack {
                Some(stack) => self.by_stack.entry(stack).or_default(),
                None => &mut self.unattributed,
            };
            site[k] += c.value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memshim_trace::CudaApi;

    #[test]
    fn activity_is_charged_to_the_managed_allocation_it_hit() {
        let mut u = Unified::default();
        u.alloc(
            0,
            &DeviceAlloc {
                api: CudaApi::MemAllocManaged,
                kind: DeviceMemory::Managed,
                addr: 0x7000_0000,
                size: 8 << 20,
                device: 0,
                stack: 4,
            },
        );
        let c = |kind, address, value| UmCounter {
            kind,
            src: 0,
            dst: 1,
            address,
            records: 1,
            value,
        };
        u.add(&[
            c(1, 0x7000_0000, 4 << 20),
            c(4, 0x7020_0000, 12),
            c(1, 0x9000_0000, 4096),
            c(42, 0x7000_0000, 1),
        ]);
        assert_eq!(u.totals[HTOD], (4 << 20) + 4096);
        assert_eq!(u.by_stack[&4][HTOD], 4 << 20);
        assert_eq!(u.by_stack[&4][GPU_PAGE_FAULTS], 12);
        assert_eq!(u.unattributed[HTOD], 4096);
    }

    #[test]
    fn managed_memory_allocated_before_the_counters_started_is_unwatched() {
        let managed = |addr, size| DeviceAlloc {
            api: CudaApi::MemAllocManaged,
            kind: DeviceMemory::Managed,
            addr,
            size,
            device: 0,
            stack: 1,
        };
        let mut u = Unified::default();
        u.alloc(100, &managed(0x1000_0000, 256 << 20));
        u.alloc(200, &managed(0x2000_0000, 1 << 20));
        u.state = Some(CuptiState {
            enabled: true,
            detail: "libcupti.so".into(),
        });
        u.since = 300;
        // Allocated once the counters run: watched.
        u.alloc(400, &managed(0x3000_0000, 8 << 20));
        assert_eq!(u.unwatched, Some((100, (256 << 20) + (1 << 20))));
    }
}
