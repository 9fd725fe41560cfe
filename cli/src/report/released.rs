//! Growth given back: call sites whose live memory climbed over most of a stretch and was then
//! freed before the end (the losses kept with their graph until the function returned). Judged as
//! growth is, over the site's life up to its release, as if it still held its high then.
//!
//! Reads the sites' high-water curves and release times only; it never adds host and device bytes.

use crate::analysis::growth::growing;
use crate::analysis::{SiteStats, SiteTable};

/// A site whose growth was given back (times in clock ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    pub stack: u32,
    /// Live bytes at its first high, and when.
    pub from: (u64, u64),
    /// Its highest, and when.
    pub peak: (u64, u64),
    /// When it fell below half of that.
    pub released_t: u64,
    pub live_end: u64,
}

/// A climb shorter than this is a burst (an import compiling a module), not growth given back.
pub const MIN_CLIMB_NS: u64 = 100_000_000;

/// The sites of `sites` that grew for at least [`MIN_CLIMB_NS`] and gave it back, largest peak
/// first; `min_bytes` ignores sites that never held that much.
pub fn released(sites: &SiteTable, min_bytes: u64) -> Vec<Released> {
    let mut list: Vec<Released> = sites
        .iter()
        .filter_map(|(stack, s)| {
            let at = s.released_t?;
            let peak = s.high_water.high();
            if s.live_bytes * 2 >= peak {
                return None;
            }
            let held = SiteStats {
                live_bytes: peak,
                high_water: s.high_water.clone(),
                ..SiteStats::default()
            };
            let g = growing([(stack, &held)].into_iter(), at, min_bytes)
                .into_iter()
                .next()
                .filter(|g| g.to.0 - g.from.0 >= MIN_CLIMB_NS)?;
            Some(Released {
                stack,
                from: g.from,
                peak: g.to,
                released_t: at,
                live_end: s.live_bytes,
            })
        })
        .collect();
    list.sort_by_key(|r| (std::cmp::Reverse(r.peak.1), r.stack));
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(points: &[(u64, u64)], live: u64, released_t: Option<u64>) -> SiteStats {
        let mut s = SiteStats {
            live_bytes: live,
            released_t,
            ..SiteStats::default()
        };
        for &(t, b) in points {
            s.high_water.observe(t, b);
        }
        s
    }

    #[test]
    fn a_climb_given_back_is_kept_a_burst_or_a_half_release_is_not() {
        let climb: Vec<(u64, u64)> = (1..=40).map(|i| (i * 10_000_000, i << 20)).collect();
        let burst: Vec<(u64, u64)> = (1..=40).map(|i| (i * 1000, i << 20)).collect();
        // Spread over its own life, but 80 ms long: a burst too.
        let quick: Vec<(u64, u64)> = (1..=40).map(|i| (i * 2_000_000, i << 20)).collect();
        let sites: SiteTable = [
            (1, site(&climb, 0, Some(410_000_000))),
            (2, site(&burst, 0, Some(50_000))),
            // Still holds 30 of its 40 MiB: not given back.
            (3, site(&climb, 30 << 20, None)),
            (4, site(&quick, 0, Some(81_000_000))),
        ]
        .into_iter()
        .collect();
        let r = released(&sites, 1 << 20);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].stack, 1);
        assert_eq!(r[0].from, (10_000_000, 1 << 20));
        assert_eq!(r[0].peak, (400_000_000, 40 << 20));
        assert_eq!((r[0].released_t, r[0].live_end), (410_000_000, 0));
    }
}
