//! NUMA state gathered while replaying: the large blocks whose placement the shim sampled (with the
//! CPU and time of their allocation), and the CPU each program thread was seen on, sample by sample
//! (the shim samples threads only on a machine with more than one node). The report maps CPUs to
//! nodes with the trace's topology.
//! Never: keeps more than [`MAX_THREADS`] threads or grows with the number of samples of a thread
//! (counts per CPU only).
use std::collections::BTreeMap;

use memshim_trace::{Placement, ThreadCpu};
use rustc_hash::FxHashMap as HashMap;

/// Threads followed at most.
pub const MAX_THREADS: usize = 10_000;

/// What kind of host memory a sampled block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostBlock {
    Heap,
    Pinned,
    Registered,
}

/// A large block whose pages were sampled.
#[derive(Clone, Debug)]
pub struct SampledBlock {
    pub placement: Placement,
    /// The CPU the allocating thread ran on, and when it allocated (clock ns).
    pub alloc_cpu: Option<u32>,
    pub alloc_t: Option<u64>,
    /// The block's stack.
    pub stack: Option<u32>,
    pub memory: HostBlock,
}

/// One program thread as the sampler saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadSeen {
    /// Its last name (`comm`).
    pub name: String,
    /// Samples by CPU.
    pub cpus: BTreeMap<u32, u64>,
    /// The first and the last sample (clock ns).
    pub first_t: u64,
    pub last_t: u64,
}

/// The program's threads by tid.
#[derive(Debug, Default)]
pub struct Threads {
    pub by_tid: HashMap<u32, ThreadSeen>,
    /// Sampling rounds seen.
    pub rounds: u64,
}

impl Threads {
    /// One sampling round at `t`.
    pub fn sample(&mut self, t: u64, threads: &[ThreadCpu]) {
        self.rounds += 1;
        for c in threads {
            if !self.by_tid.contains_key(&c.tid) && self.by_tid.len() >= MAX_THREADS {
                continue;
            }
            let seen = self.by_tid.entry(c.tid).or_insert_with(|| ThreadSeen {
                first_t: t,
                ..ThreadSeen::default()
            });
            if let Some(name) = &c.name {
                seen.name.clone_from(name);
            }
            *seen.cpus.entry(c.cpu).or_default() += 1;
            seen.last_t = t;
        }
    }
}

/// Allocations remembered to date the one an `AllocCpu` record follows.
const RECENT: usize = 64;

/// The last [`RECENT`] allocations as (address, time): an `AllocCpu` record is sent right after its
/// allocation by the same thread, but stamped by the writer (later, and after any placement call the
/// thread made meanwhile), so the allocation's own time comes from here.
#[derive(Debug)]
pub struct RecentAllocs {
    ring: [(u64, u64); RECENT],
    next: usize,
}

impl Default for RecentAllocs {
    fn default() -> Self {
        RecentAllocs {
            ring: [(0, 0); RECENT],
            next: 0,
        }
    }
}

impl RecentAllocs {
    /// An allocation at `addr` at `t`.
    pub fn push(&mut self, addr: u64, t: u64) {
        self.ring[self.next] = (addr, t);
        self.next = (self.next + 1) % RECENT;
    }

    /// When the latest allocation at `addr` among the last ones was made.
    pub fn time_of(&self, addr: u64) -> Option<u64> {
        (1..=RECENT)
            .map(|back| self.ring[(self.next + RECENT - back) % RECENT])
            .find(|e| e.0 == addr && addr != 0)
            .map(|e| e.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_allocation_at_an_address_dates_it() {
        let mut r = RecentAllocs::default();
        assert_eq!(r.time_of(0x1000), None);
        for i in 0..100u64 {
            r.push(0x1000 + (i % 3) * 16, i);
        }
        assert_eq!(r.time_of(0x1000), Some(99));
        assert_eq!(r.time_of(0x1010), Some(97));
        assert_eq!(r.time_of(0x2000), None);
    }

    #[test]
    fn samples_count_per_cpu_and_keep_the_last_name() {
        let mut th = Threads::default();
        let at = |tid, cpu, name: Option<&str>| ThreadCpu {
            tid,
            cpu,
            name: name.map(str::to_string),
        };
        th.sample(100, &[at(7, 1, Some("worker")), at(8, 0, Some("main"))]);
        th.sample(200, &[at(7, 1, None), at(8, 0, None)]);
        th.sample(300, &[at(7, 0, Some("migrator")), at(8, 0, None)]);
        let w = &th.by_tid[&7];
        assert_eq!(w.name, "migrator");
        assert_eq!(w.cpus, BTreeMap::from([(0, 1), (1, 2)]));
        assert_eq!((w.first_t, w.last_t), (100, 300));
        assert_eq!(th.rounds, 3);
    }
}
