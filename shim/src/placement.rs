//! Where large blocks live: the writer keeps the host blocks of at least `MEMSHIM_PLACEMENT_BYTES`
//! (1 MiB by default) and, once a block is 100 ms old (so it has likely been touched), asks the kernel
//! which NUMA node each of up to 16 evenly spread pages is on (`move_pages` with no target nodes: a
//! query that moves nothing). Untouched pages report as absent and the block is asked again later.
//!
//! # Safety
//! `move_pages` reads only the page addresses it is given, in this process; a page that was unmapped
//! meanwhile reports an error in its status instead of faulting, so asking about a block freed since
//! is harmless.
#![allow(unsafe_code)]

use std::collections::HashMap;

use memshim_trace::Placement;

/// Pages sampled per block.
const PAGES: usize = 16;
/// A block is sampled once it is this old.
const AGE_NS: u64 = 100_000_000;
/// Blocks sampled per round, so a flood of large blocks cannot stall the writer.
const PER_ROUND: usize = 32;
/// Rounds a block whose pages are all absent is asked again.
const TRIES: u8 = 5;

/// The large blocks waiting to be sampled.
#[derive(Default)]
pub struct Placements {
    pending: HashMap<u64, (u64, u64, u8)>,
    page: u64,
}

impl Placements {
    /// A large block was allocated at `t`.
    pub fn alloc(&mut self, addr: u64, len: u64, t: u64) {
        self.pending.insert(addr, (len, t, 0));
    }

    /// A block was freed.
    pub fn free(&mut self, addr: u64) {
        self.pending.remove(&addr);
    }

    /// Samples the blocks old enough; returns what was found.
    pub fn sample(&mut self, now: u64) -> Vec<Placement> {
        if self.page == 0 {
            self.page = crate::sys::page_size().max(4096);
        }
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, &(_, t, _))| now.saturating_sub(t) >= AGE_NS)
            .map(|(&a, _)| a)
            .take(PER_ROUND)
            .collect();
        let mut out = Vec::new();
        for addr in due {
            let Some(&(len, t, tries)) = self.pending.get(&addr) else {
                continue;
            };
            let p = query(addr, len, self.page);
            if p.nodes.is_empty() && tries + 1 < TRIES {
                self.pending.insert(addr, (len, t, tries + 1));
                continue;
            }
            self.pending.remove(&addr);
            out.push(p);
        }
        out
    }
}

/// Asks where up to `PAGES` pages spread over the block are.
fn query(addr: u64, len: u64, page: u64) -> Placement {
    let first = addr.next_multiple_of(page);
    let last = (addr + len).saturating_sub(1) / page * page;
    let span = last.saturating_sub(first) / page + 1;
    let n = (span as usize).clamp(1, PAGES);
    let mut pages: Vec<*mut libc::c_void> = (0..n as u64)
        .map(|i| (first + i * (span / n as u64).max(1) * page) as *mut libc::c_void)
        .collect();
    let mut status = vec![0 as libc::c_int; n];
    // SAFETY: see the module note: a query (nodes = NULL) about this process's own pages; both arrays
    // hold `n` entries.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            n as libc::c_ulong,
            pages.as_mut_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0,
        )
    };
    let mut nodes: Vec<(u32, u32)> = Vec::new();
    let mut absent = 0;
    for &s in &status {
        if r < 0 || s < 0 {
            absent += 1;
        } else if let Some(e) = nodes.iter_mut().find(|e| e.0 == s as u32) {
            e.1 += 1;
        } else {
            nodes.push((s as u32, 1));
        }
    }
    nodes.sort_unstable();
    Placement {
        addr,
        len,
        pages: n as u32,
        nodes,
        absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_pages_are_on_a_node_untouched_ones_absent() {
        let len = 4 << 20;
        let mut touched = vec![1u8; len];
        touched[len - 1] = 2;
        let p = query(touched.as_ptr() as u64, len as u64, 4096);
        assert_eq!(p.pages, 16);
        assert_eq!(p.nodes.iter().map(|n| n.1).sum::<u32>() + p.absent, 16);
        assert!(!p.nodes.is_empty(), "{p:?}");
        let mut set = Placements::default();
        set.alloc(touched.as_ptr() as u64, len as u64, 0);
        assert!(set.sample(AGE_NS / 2).is_empty(), "too young");
        assert_eq!(set.sample(AGE_NS).len(), 1);
        assert!(set.sample(2 * AGE_NS).is_empty(), "sampled once");
    }
}
