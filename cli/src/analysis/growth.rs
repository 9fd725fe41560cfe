//! Growth: call sites whose live bytes keep climbing over the run (the "8 GB at step 10, 80 GB at
//! step 200" pattern), as opposed to a site that allocated a lot once, early.
//!
//! Each site keeps the points where its live bytes set a new high-water mark (see `high_water`). At
//! the end a site is growing when its new highs are spread over most of its own
//! lifetime (from its first allocation to the end of the run, so a leak that starts late in a long
//! process — a training loop after a slow import — is judged on the loop) and it still holds most of
//! its high-water mark.
use super::SiteStats;

/// Equal slices of the run in which new highs are looked for.
const SLICES: u64 = 8;
/// A growing site set new highs in at least this many slices.
const MIN_SLICES: usize = 4;

/// A site found growing.
#[derive(Clone, Debug, PartialEq)]
pub struct Growing {
    /// The site's stack id.
    pub stack: u32,
    /// Live bytes at the first kept high, and when.
    pub from: (u64, u64),
    /// Live bytes at the last high, and when.
    pub to: (u64, u64),
    /// Bytes per second between them.
    pub rate: f64,
    /// Live bytes at the end.
    pub live_end: u64,
}

/// The growing sites among `sites`, fastest first. `end` is when this kind of memory was last
/// allocated or freed (clock ns) — not the process's last event, since a slow teardown after the
/// work would dilute the work's growth; `min_bytes` ignores sites that never held that much.
pub fn growing<'a>(
    sites: impl Iterator<Item = (u32, &'a SiteStats)>,
    end: u64,
    min_bytes: u64,
) -> Vec<Growing> {
    let mut out: Vec<Growing> = sites
        .filter(|(stack, _)| *stack != memshim_trace::UNSAMPLED)
        .filter_map(|(stack, s)| {
            let pts = &s.high_water.points;
            let (&first, &last) = (pts.first()?, pts.last()?);
            let start = first.0;
            let span = end.max(last.0).saturating_sub(start).max(1);
            if last.1 < min_bytes || s.live_bytes * 10 < last.1 * 9 || last.0 <= first.0 {
                return None;
            }
            let mut slices: Vec<u64> = pts
                .iter()
                .map(|&(t, _)| (t.saturating_sub(start) * SLICES / span).min(SLICES - 1))
                .collect();
            slices.dedup();
            if slices.len() < MIN_SLICES {
                return None;
            }
            let rate = (last.1 - first.1) as f64 / ((last.0 - first.0) as f64 / 1e9);
            Some(Growing {
                stack,
                from: (first.0, first.1),
                to: (last.0, last.1),
                rate,
                live_end: s.live_bytes,
            })
        })
        .collect();
    out.sort_by(|a, b| b.rate.total_cmp(&a.rate).then(a.stack.cmp(&b.stack)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::high_water::MAX_POINTS;

    fn site(points: &[(u64, u64)], live: u64) -> SiteStats {
        let mut s = SiteStats {
            live_bytes: live,
            ..SiteStats::default()
        };
        for &(t, b) in points {
            s.high_water.observe(t, b);
        }
        s
    }

    #[test]
    fn steady_climb_is_growth_early_burst_is_not() {
        let climb: Vec<(u64, u64)> = (1..=100).map(|i| (i * 10_000_000, i * 1000)).collect();
        let burst: Vec<(u64, u64)> = (1..=100).map(|i| (i * 1000, i * 1000)).collect();
        let a = site(&climb, 100_000);
        let b = site(&burst, 100_000);
        let freed = site(&climb, 1000);
        let sites = [(1, &a), (2, &b), (3, &freed)];
        let g = growing(sites.iter().map(|(i, s)| (*i, *s)), 1_000_000_000, 1);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].stack, 1);
        assert!(a.high_water.points.len() <= MAX_POINTS);
        assert_eq!(g[0].to, (1_000_000_000, 100_000));
        assert!((g[0].rate - 99_000.0 / 0.99).abs() < 1.0, "{}", g[0].rate);
    }

    #[test]
    fn a_leak_that_starts_late_is_judged_on_its_own_lifetime() {
        // 40 s of start-up, then a 1 s loop that leaks every step until the end.
        let late: Vec<(u64, u64)> = (1..=60)
            .map(|i| (40_000_000_000 + i * 16_000_000, i * 4096))
            .collect();
        let s = site(&late, 60 * 4096);
        let g = growing([(7, &s)].into_iter(), 41_000_000_000, 1);
        assert_eq!(g.len(), 1);
        // A site that grew early and then stopped for good is not growing at the end.
        let early: Vec<(u64, u64)> = (1..=60).map(|i| (i * 16_000_000, i * 4096)).collect();
        let s = site(&early, 60 * 4096);
        assert!(growing([(8, &s)].into_iter(), 41_000_000_000, 1).is_empty());
    }
}
