//! The host heap: live blocks, leaks by site at the end, peak live bytes and when it happened,
//! allocation counts, and temporary allocations (freed before the same thread allocated anything
//! else, as heaptrack defines them).
use rustc_hash::FxHashMap as HashMap;

use super::addr_map::AddrMap;
use super::live_blocks::{Block, LiveBlocks};
use super::{AtPeak, SiteStats, SiteTable};

/// The heap analysis state.
#[derive(Default, Debug)]
pub struct Heap {
    live: LiveBlocks,
    /// Identities handed out for live blocks (see [`Heap::block_identity`]), by address: only blocks
    /// something asked about have one, so a block costs nothing for it.
    identities: AddrMap<u64>,
    next_identity: u64,
    sites: SiteTable,
    last_alloc: HashMap<u32, u64>,
    /// The block each thread's last realloc freed, with its identity, until the thread allocates.
    realloc_freed: HashMap<u32, (u64, Block, Option<u64>)>,
    /// New peaks so far: what each site's [`AtPeak`] is of.
    peaks: u64,
    /// Allocations seen.
    pub allocations: u64,
    /// Frees of blocks seen allocated.
    pub frees: u64,
    /// Bytes allocated over the run.
    pub allocated_bytes: u64,
    /// Bytes live now.
    pub live_bytes: u64,
    /// The most bytes live at once.
    pub peak_bytes: u64,
    /// When the peak was reached (clock ns).
    pub peak_t: u64,
    /// Blocks freed before their thread allocated again.
    pub temporary: u64,
    /// Frees (and reallocs) of blocks whose allocation was never recorded: made before tracing
    /// began, or through a path the shim does not see. Counted, never subtracted from anything.
    pub unknown_frees: u64,
    /// Time of the last allocation or free (clock ns).
    pub last_t: u64,
    /// Mean bytes between sampled stacks, 0 when every stack was taken.
    pub sample_bytes: u64,
    /// Live bytes over time.
    pub series: super::timeline::Series,
}

impl Heap {
    /// An allocation of `size` bytes at `addr` from stack `stack`.
    pub fn alloc(&mut self, t: u64, tid: u32, addr: u64, size: u64, stack: u32) {
        self.realloc_freed.remove(&tid);
        self.last_t = self.last_t.max(t);
        let block = Block {
            size,
            stack,
            weight: self.weight(size, stack),
        };
        // One lookup for both: the map is large and each probe is likely a cache miss.
        if let Some(old) = self.live.insert(addr, block) {
            // Its free was never seen (freed through a path the shim does not see): forget it.
            self.release(old, t);
            self.take_identity(addr);
        }
        let site = self.sites.get_or_default(stack);
        note_peak(site, self.peaks);
        site.est_live_bytes += block.weight * size as f64;
        site.est_live_count += block.weight;
        site.allocations += 1;
        site.allocated_bytes += size;
        site.live_count += 1;
        site.live_bytes += size;
        if site.live_bytes > site.high_water.high() {
            site.released_t = None;
        }
        site.high_water.observe(t, site.live_bytes);
        self.allocations += 1;
        self.allocated_bytes += size;
        self.live_bytes += size;
        if self.live_bytes > self.peak_bytes {
            self.peak_bytes = self.live_bytes;
            self.peak_t = t;
            self.peaks += 1;
        }
        self.series.push(t, self.live_bytes);
        self.last_alloc.insert(tid, addr);
    }

    /// A free; returns the bytes released. Blocks allocated before tracing started are not known and
    /// are ignored (0 bytes).
    pub fn free(&mut self, t: u64, tid: u32, addr: u64, realloc: bool) -> u64 {
        let Some(block) = self.live.free(addr) else {
            if addr != 0 {
                self.unknown_frees += 1;
            }
            return 0;
        };
        self.last_t = self.last_t.max(t);
        self.frees += 1;
        self.release(block, t);
        let identity = self.take_identity(addr);
        self.series.push(t, self.live_bytes);
        let last = self.last_alloc.remove(&tid);
        if realloc {
            self.realloc_freed.insert(tid, (addr, block, identity));
        } else if last == Some(addr) {
            self.temporary += 1;
        }
        block.size
    }

    /// A realloc failed: its block, freed a moment ago on this thread, is live again.
    pub fn realloc_failed(&mut self, tid: u32, addr: u64) {
        self.live.unfree(addr);
        if let Some((a, block, identity)) = self.realloc_freed.remove(&tid) {
            if a == addr {
                self.frees -= 1;
                self.live.insert(addr, block);
                match identity {
                    Some(id) => {
                        self.identities.insert(addr, id);
                    }
                    None => {
                        self.take_identity(addr);
                    }
                }
                let site = self.sites.get_or_default(block.stack);
                note_peak(site, self.peaks);
                site.live_count += 1;
                site.live_bytes += block.size;
                site.est_live_bytes += block.weight * block.size as f64;
                site.est_live_count += block.weight;
                self.live_bytes += block.size;
            }
        }
    }

    /// Starts fetching the live block at `addr`, for an allocation or free a few events later.
    pub fn prefetch(&self, addr: u64) {
        self.live.prefetch(addr);
    }

    /// Every live block as (address, size), in no particular order.
    pub fn live_blocks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.live.iter().map(|(a, b)| (a, b.size))
    }

    /// Follows freed blocks that no allocation reused since, for the holes analysis (see
    /// [`Heap::freed_blocks`]).
    pub fn follow_freed(&mut self) {
        self.live.follow_freed();
    }

    /// The followed freed blocks as (address, size), in no particular order.
    pub fn freed_blocks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.live.freed()
    }

    /// Frees not followed because the most freed blocks were already.
    pub fn untracked_frees(&self) -> u64 {
        self.live.untracked
    }

    /// Bytes the live-block tables take.
    pub fn live_table_bytes(&self) -> usize {
        self.live.table_bytes()
    }

    /// The sites holding memory when the peak was reached, with what they held then (live bytes and
    /// blocks) and their totals over the run.
    pub fn peak_sites(&self) -> SiteTable {
        let at_peak = |total: &SiteStats| {
            if total.at_peak.peak == self.peaks {
                (total.at_peak.bytes, total.at_peak.count)
            } else {
                // Unchanged since the peak.
                (total.live_bytes, total.live_count)
            }
        };
        let mut out = SiteTable::default();
        for (stack, total) in self.sites.iter() {
            let (bytes, count) = at_peak(total);
            if count > 0 {
                let s = SiteStats {
                    allocations: total.allocations,
                    allocated_bytes: total.allocated_bytes,
                    live_count: count,
                    live_bytes: bytes,
                    ..SiteStats::default()
                };
                out.insert(stack, s);
            }
        }
        out
    }

    fn release(&mut self, block: Block, t: u64) {
        self.live_bytes -= block.size;
        if let Some(site) = self.sites.get_mut(&block.stack) {
            note_peak(site, self.peaks);
            site.live_count -= 1;
            site.live_bytes -= block.size;
            site.est_live_bytes -= block.weight * block.size as f64;
            site.est_live_count -= block.weight;
            if site.released_t.is_none() && site.live_bytes * 2 < site.high_water.high() {
                site.released_t = Some(t);
            }
        }
    }

    /// The usable size of the sampled block at `addr` (thin sampling), which its chance of being
    /// sampled depended on: its weight is made again from it.
    pub fn usable(&mut self, addr: u64, usable: u64) {
        let Some(block) = self.live.get(addr) else {
            return;
        };
        let weight = self.weight(usable, block.stack);
        if let Some(site) = self.sites.get_mut(&block.stack) {
            site.est_live_bytes += (weight - block.weight) * block.size as f64;
            site.est_live_count += weight - block.weight;
        }
        self.live.insert(addr, Block { weight, ..block });
    }

    /// The inverse of the chance that an allocation of `size` bytes was sampled.
    fn weight(&self, size: u64, stack: u32) -> f64 {
        if self.sample_bytes == 0 || stack == memshim_trace::UNSAMPLED {
            return 1.0;
        }
        let p = 1.0 - (-(size.max(1) as f64) / self.sample_bytes as f64).exp();
        1.0 / p
    }

    /// The stack id of the live block that starts at `addr`, if one does.
    pub fn block_stack(&self, addr: u64) -> Option<u32> {
        self.live.get(addr).map(|b| b.stack)
    }

    /// The identity of the live block that starts at `addr`, if one does: the same number for as
    /// long as that block lives (a realloc that failed included), another for the next block there.
    pub fn block_identity(&mut self, addr: u64) -> Option<u64> {
        if !self.live.contains(addr) {
            return None;
        }
        if let Some(&id) = self.identities.get(addr) {
            return Some(id);
        }
        let id = self.next_identity;
        self.next_identity += 1;
        self.identities.insert(addr, id);
        Some(id)
    }

    /// Forgets the identity of the block at `addr`, which is gone; returns it.
    fn take_identity(&mut self, addr: u64) -> Option<u64> {
        if self.identities.is_empty() {
            return None;
        }
        self.identities.remove(addr)
    }

    /// Blocks live now.
    pub fn live_count(&self) -> u64 {
        self.live.len() as u64
    }

    /// Per-site statistics.
    pub fn sites(&self) -> &SiteTable {
        &self.sites
    }
}

/// Before a site's live numbers change: the first change after a new peak keeps what it held at
/// that peak (see [`AtPeak`]).
#[inline]
fn note_peak(site: &mut SiteStats, peaks: u64) {
    if site.at_peak.peak != peaks {
        site.at_peak = AtPeak {
            bytes: site.live_bytes,
            count: site.live_count,
            peak: peaks,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(h: &mut Heap, t: u64, tid: u32, addr: u64, size: u64, stack: u32) {
        h.alloc(t, tid, addr, size, stack);
    }

    fn free(h: &mut Heap, tid: u32, addr: u64, realloc: bool) {
        h.free(0, tid, addr, realloc);
    }

    #[test]
    fn leaks_peak_and_temporaries() {
        let mut h = Heap::default();
        alloc(&mut h, 1, 1, 0x10, 100, 7);
        alloc(&mut h, 2, 1, 0x20, 50, 8);
        free(&mut h, 1, 0x20, false); // temporary: nothing allocated in between
        alloc(&mut h, 3, 1, 0x30, 200, 7);
        alloc(&mut h, 4, 2, 0x40, 10, 9);
        free(&mut h, 1, 0x30, false); // thread 1 allocated nothing since: temporary too
        free(&mut h, 2, 0x999, false); // unknown: ignored, but counted
        assert_eq!(h.unknown_frees, 1);
        assert_eq!(h.allocations, 4);
        assert_eq!(h.frees, 2);
        assert_eq!(h.temporary, 2);
        assert_eq!(h.live_bytes, 110);
        assert_eq!((h.peak_bytes, h.peak_t), (310, 4));
        let sites = super::super::live_sites(h.sites());
        assert_eq!(sites.len(), 2);
        assert_eq!(
            (sites[0].0, sites[0].1.live_bytes, sites[0].1.live_count),
            (7, 100, 1)
        );
        assert_eq!(sites[0].1.allocations, 2);
        assert_eq!((sites[1].0, sites[1].1.live_bytes), (9, 10));
    }

    #[test]
    fn realloc_moves_the_block_and_failure_restores_it() {
        let mut h = Heap::default();
        alloc(&mut h, 1, 1, 0x10, 16, 1);
        free(&mut h, 1, 0x10, true);
        alloc(&mut h, 2, 1, 0x50, 64, 2);
        free(&mut h, 1, 0x50, true);
        h.realloc_failed(1, 0x50);
        assert_eq!(h.live_bytes, 64);
        assert_eq!(h.live_count(), 1);
        assert_eq!(h.temporary, 0);
        let sites = super::super::live_sites(h.sites());
        assert_eq!(sites.len(), 1);
        assert_eq!((sites[0].0, sites[0].1.live_bytes), (2, 64));
    }

    #[test]
    fn sites_at_the_peak_are_what_they_held_then() {
        let mut h = Heap::default();
        alloc(&mut h, 1, 1, 0x10, 100, 1);
        alloc(&mut h, 2, 1, 0x20, 300, 2);
        alloc(&mut h, 3, 1, 0x30, 50, 1); // peak: site 1 150 in 2, site 2 300 in 1
        free(&mut h, 1, 0x20, false);
        alloc(&mut h, 5, 1, 0x40, 200, 3); // 350 live: below the 450 peak
        free(&mut h, 1, 0x10, false);
        let peak = h.peak_sites();
        assert_eq!(h.peak_bytes, 450);
        assert_eq!(h.peak_t, 3);
        let got = |k: u32| {
            peak.get(&k)
                .map(|s| (s.live_bytes, s.live_count, s.allocations))
        };
        assert_eq!(got(1), Some((150, 2, 2)));
        assert_eq!(got(2), Some((300, 1, 1)));
        assert_eq!(got(3), None, "allocated after the peak");
        alloc(&mut h, 7, 1, 0x50, 1000, 3); // a new peak: 50 + 200 + 1000
        let peak = h.peak_sites();
        assert_eq!(h.peak_bytes, 1250);
        assert_eq!(peak.get(&3).map(|s| s.live_bytes), Some(1200));
        assert_eq!(peak.get(&1).map(|s| s.live_bytes), Some(50));
        assert!(!peak.contains_key(&2), "freed before the new peak");
        // Changes after the peak, to sites that last changed before it and at it, leave it as it was.
        free(&mut h, 1, 0x30, false);
        free(&mut h, 1, 0x50, false);
        alloc(&mut h, 9, 1, 0x60, 10, 4);
        let again = h.peak_sites();
        assert_eq!(again, peak);
        // A third peak, with a site that changed twice since the second.
        alloc(&mut h, 10, 1, 0x70, 2000, 4);
        let third = h.peak_sites();
        assert_eq!(h.peak_bytes, 2210);
        assert_eq!(
            third.get(&4).map(|s| (s.live_bytes, s.live_count)),
            Some((2010, 2))
        );
        assert_eq!(third.get(&3).map(|s| s.live_bytes), Some(200));
        assert!(!third.contains_key(&1));
    }
}
