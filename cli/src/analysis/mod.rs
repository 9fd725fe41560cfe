//! Analyses: each consumes the event stream once with state bounded by the live set and the number
//! of distinct stacks, and yields plain numbers for the report. No rendering here.
pub mod addr_map;
pub mod counters;
pub mod device;
pub mod fragmentation;
pub mod gpus;
pub mod growth;
pub mod heap;
pub mod heap_totals;
pub mod high_water;
pub mod holes;
pub mod id_table;
pub mod kinds;
pub mod live_blocks;
pub mod mmap;
pub mod neighbours;
pub mod numa;
pub mod prefetch;
pub mod program_peak;
pub mod python_sites;
pub mod timeline;
pub mod torch;
pub mod torch_steps;
pub mod transfers;
pub mod unified;

pub use id_table::{IdTable, SiteTable};

/// What one call site did, by stack id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SiteStats {
    /// Blocks allocated here over the run.
    pub allocations: u64,
    /// Bytes allocated here over the run.
    pub allocated_bytes: u64,
    /// Blocks from here still live.
    pub live_count: u64,
    /// Bytes from here still live.
    pub live_bytes: u64,
    /// When this site's live bytes set new highs.
    pub high_water: high_water::HighWater,
    /// With sampling: live bytes and blocks this site's sampled blocks stand for.
    pub est_live_bytes: f64,
    pub est_live_count: f64,
    /// When its live bytes first fell below half of its highest since that high (none while it
    /// still holds half or more): growth given back.
    pub released_t: Option<u64>,
    /// The heap analysis's own note of what this site held at the heap's peak (see
    /// `heap::Heap::peak_sites`); nothing else reads or merges it.
    pub(crate) at_peak: AtPeak,
}

/// What a site held when the heap last set its peak, kept lazily: written when the site changes
/// for the first time after a new peak (until then its live numbers are those it had at the peak),
/// so a new peak costs nothing, where copying the sites that changed since the last one had been
/// four hash-table operations an allocation while the heap climbed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct AtPeak {
    pub(crate) bytes: u64,
    pub(crate) count: u64,
    /// The peak these numbers are of (`Heap`'s count of peaks).
    pub(crate) peak: u64,
}

impl SiteStats {
    /// Adds another heap's numbers for the same stack, as when device and physical CUDA memory are
    /// reported together.
    pub fn absorb(&mut self, other: &SiteStats) {
        self.allocations += other.allocations;
        self.allocated_bytes += other.allocated_bytes;
        self.live_count += other.live_count;
        self.live_bytes += other.live_bytes;
        self.high_water.merge(&other.high_water);
        self.est_live_bytes += other.est_live_bytes;
        self.est_live_count += other.est_live_count;
        self.released_t = self.released_t.max(other.released_t);
    }
}

/// Several heaps' sites summed by stack id: a stack that allocated more than one kind keeps all of it.
pub fn merge_sites<'a>(heaps: impl IntoIterator<Item = &'a SiteTable>) -> SiteTable {
    let mut merged = SiteTable::default();
    for sites in heaps {
        for (id, s) in sites.iter() {
            merged.get_or_default(id).absorb(s);
        }
    }
    merged
}

/// Live blocks grouped by site, largest first (ties by count, then stack id for a stable order).
pub fn live_sites(sites: &SiteTable) -> Vec<(u32, SiteStats)> {
    let mut v: Vec<(u32, SiteStats)> = sites
        .iter()
        .filter(|(id, s)| s.live_count > 0 && *id != memshim_trace::UNSAMPLED)
        .map(|(id, s)| (id, s.clone()))
        .collect();
    v.sort_by(|a, b| {
        b.1.live_bytes
            .cmp(&a.1.live_bytes)
            .then(b.1.live_count.cmp(&a.1.live_count))
            .then(a.0.cmp(&b.0))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(live_bytes: u64, t: u64) -> SiteStats {
        let mut s = SiteStats {
            allocations: 2,
            allocated_bytes: 2 * live_bytes,
            live_count: 1,
            live_bytes,
            ..SiteStats::default()
        };
        s.high_water.observe(t, live_bytes);
        s
    }

    #[test]
    fn merged_sites_add_up_by_stack() {
        let a: SiteTable = [(7, site(100, 10)), (8, site(5, 1))].into_iter().collect();
        let b: SiteTable = [(7, site(300, 20))].into_iter().collect();
        let m = merge_sites([&a, &b]);
        assert_eq!(m.len(), 2);
        let s = &m[&7];
        assert_eq!(
            (s.allocations, s.allocated_bytes, s.live_count, s.live_bytes),
            (4, 800, 2, 400)
        );
        assert_eq!(s.high_water.points[..], [(10, 100), (20, 300)]);
        assert_eq!(m[&8], site(5, 1));
    }
}
