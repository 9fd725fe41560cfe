//! Analyses: each consumes the event stream once with state bounded by the live set and the number
//! of distinct stacks, and yields plain numbers for the report. No rendering here.
pub mod device;
pub mod fragmentation;
pub mod growth;
pub mod heap;
pub mod mmap;
pub mod timeline;
pub mod transfers;

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
    pub high_water: growth::HighWater,
    /// With sampling: live bytes and blocks this site's sampled blocks stand for.
    pub est_live_bytes: f64,
    pub est_live_count: f64,
}

/// Live blocks grouped by site, largest first (ties by count, then stack id for a stable order).
pub fn live_sites(sites: &rustc_hash::FxHashMap<u32, SiteStats>) -> Vec<(u32, SiteStats)> {
    let mut v: Vec<(u32, SiteStats)> = sites
        .iter()
        .filter(|(id, s)| s.live_count > 0 && **id != memshim_trace::UNSAMPLED)
        .map(|(&id, s)| (id, s.clone()))
        .collect();
    v.sort_by(|a, b| {
        b.1.live_bytes
            .cmp(&a.1.live_bytes)
            .then(b.1.live_count.cmp(&a.1.live_count))
            .then(a.0.cmp(&b.0))
    });
    v
}
