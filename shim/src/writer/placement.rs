//! Where large blocks live: the writer keeps the host blocks of at least `MEMSHIM_PLACEMENT_BYTES`
//! (1 MiB by default) and, once a block is 100 ms old (so it has likely been touched), asks the kernel
//! which NUMA node each of up to 16 evenly spread pages is on (`move_pages` with no target nodes: a
//! query that moves nothing). Untouched pages report as absent and the block is asked again on the
//! next rounds, up to a second after its first sample: a large buffer is often still being filled at
//! 100 ms (a 64 MiB memset took 450 ms in an emulated guest). What was learnt of a block that is freed,
//! or still partly untouched when the process ends, is not lost: `free` and `finish` hand it over.
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
/// Rounds a block whose sampled pages are not all resident is asked (one every 100 ms flush).
const TRIES: u8 = 10;

/// A large block waiting to be sampled (again).
struct Pending {
    len: u64,
    /// When it was allocated.
    t: u64,
    tries: u8,
    /// The best answer so far, while some sampled pages were absent.
    partial: Option<Placement>,
}

/// The large blocks waiting to be sampled.
#[derive(Default)]
pub struct Placements {
    pending: HashMap<u64, Pending>,
    page: u64,
}

/// The answer with more resident pages (the later one on a tie: pages only arrive).
fn better(old: Option<Placement>, new: Placement) -> Placement {
    let resident = |p: &Placement| p.nodes.iter().map(|n| n.1).sum::<u32>();
    match old {
        Some(old) if resident(&old) > resident(&new) => old,
        _ => new,
    }
}

impl Placements {
    /// A large block was allocated at `t`.
    pub fn alloc(&mut self, addr: u64, len: u64, t: u64) {
        self.pending.insert(
            addr,
            Pending {
                len,
                t,
                tries: 0,
                partial: None,
            },
        );
    }

    /// A block is being freed: what was found of it so far, to record before the free.
    pub fn free(&mut self, addr: u64) -> Option<Placement> {
        self.pending.remove(&addr).and_then(|p| p.partial)
    }

    /// Samples the blocks old enough; returns what was found of those done with.
    pub fn sample(&mut self, now: u64) -> Vec<Placement> {
        self.ensure_page();
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| now.saturating_sub(p.t) >= AGE_NS)
            .map(|(&a, _)| a)
            .take(PER_ROUND)
            .collect();
        let mut out = Vec::new();
        for addr in due {
            let Some(mut p) = self.pending.remove(&addr) else {
                continue;
            };
            let found = better(p.partial.take(), query(addr, p.len, self.page));
            if found.absent > 0 && p.tries + 1 < TRIES {
                p.tries += 1;
                p.partial = Some(found).filter(|f| !f.nodes.is_empty());
                self.pending.insert(addr, p);
            } else {
                out.push(found);
            }
        }
        out
    }

    /// The process ends: the blocks already asked about but not yet fully resident, asked once more.
    /// Blocks never asked (younger than 100 ms) stay unreported, as blocks freed that young are.
    pub fn finish(&mut self) -> Vec<Placement> {
        self.ensure_page();
        let page = self.page;
        self.pending
            .drain()
            .filter_map(|(addr, p)| {
                let partial = p.partial?;
                Some(better(Some(partial), query(addr, p.len, page)))
            })
            .collect()
    }

    fn ensure_page(&mut self) {
        if self.page == 0 {
            self.page = crate::sys::page_size().max(4096);
        }
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

    /// Fresh anonymous memory in small pages: none is resident until written.
    fn fresh(len: usize) -> *mut u8 {
        // SAFETY: a new private anonymous mapping; nothing that exists is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: advice on the mapping just made; small pages make the resident counts exact.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        p.cast()
    }

    fn resident(p: &Placement) -> u32 {
        p.nodes.iter().map(|n| n.1).sum()
    }

    #[test]
    fn a_block_still_being_filled_is_asked_again_and_not_lost() {
        let len = 4 << 20;
        let (a, b, c) = (fresh(len), fresh(len), fresh(len));
        let mut set = Placements::default();
        for p in [a, b, c] {
            set.alloc(p as u64, len as u64, 0);
        }
        // SAFETY: all inside the mappings: half of a, the first page of b and of c.
        unsafe {
            a.write_bytes(1, len / 2);
            b.write(1);
            c.write(1);
        }
        assert!(set.sample(AGE_NS).is_empty(), "partly filled: asked again");
        // SAFETY: the second half of a.
        unsafe { a.add(len / 2).write_bytes(2, len / 2) };
        let done = set.sample(2 * AGE_NS);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!((done[0].addr, resident(&done[0])), (a as u64, 16));
        // b is freed with one sampled page seen: that answer comes back with the free, once.
        let seen = set.free(b as u64).expect("the pages seen so far");
        assert_eq!((resident(&seen), seen.absent), (1, 15));
        assert!(set.free(b as u64).is_none());
        // c is still partly untouched when the process ends: asked once more and reported.
        // SAFETY: inside c: the last of the 16 sampled pages (one every len / 16 bytes).
        unsafe { c.add(len / 16 * 15).write(3) };
        let last = set.finish();
        assert_eq!(last.len(), 1, "{last:?}");
        assert_eq!((last[0].addr, resident(&last[0])), (c as u64, 2));
        assert!(set.finish().is_empty());
        for p in [a, b, c] {
            // SAFETY: the mappings made above, no longer used.
            unsafe { libc::munmap(p.cast(), len) };
        }
    }
}
