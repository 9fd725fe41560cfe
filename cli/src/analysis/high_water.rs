//! A site's high-water history: the points where its live bytes set a new high, thinned to at most
//! [`MAX_POINTS`] spread evenly over the time the highs were set, so memory stays bounded however
//! long the run. What the growth analysis (`growth`) judges a site by.
//!
//! The thinning must keep the spread in time, since that is what growth is judged on: halving the
//! list while new highs were still taken one by one left a steady climb of thousands of
//! allocations as its first point and a cluster in its last few milliseconds, which no longer
//! looked like growth at all.

use smallvec::SmallVec;

/// High-water points kept per site.
pub const MAX_POINTS: usize = 32;

/// A site's high-water history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HighWater {
    /// (time ns, live bytes) at each kept new high; the last is always the latest high. The first
    /// in place: most sites set one high.
    pub points: SmallVec<[(u64, u64); 1]>,
    /// The least time between kept points: 0 until the list first fills, then about the span
    /// over half the points, so that a new high closer to the previous kept point than this
    /// replaces the last point instead of adding one.
    gap_ns: u64,
}

impl HighWater {
    /// Notes the site's live bytes after an allocation.
    pub fn observe(&mut self, t: u64, live: u64) {
        if self.points.last().is_some_and(|&(_, hi)| live <= hi) {
            return;
        }
        let n = self.points.len();
        if n >= 2 && t.saturating_sub(self.points[n - 2].0) < self.gap_ns {
            self.points[n - 1] = (t, live);
            return;
        }
        self.points.push((t, live));
        if self.points.len() > MAX_POINTS {
            let last = *self.points.last().expect("non-empty");
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            if self.points.last() != Some(&last) {
                self.points.push(last);
            }
            let first = self.points[0].0;
            let span = last.0.saturating_sub(first);
            self.gap_ns = self.gap_ns.max(span / (MAX_POINTS as u64 / 2));
        }
    }

    /// The highest live bytes seen (0 before any).
    pub fn high(&self) -> u64 {
        self.points.last().map_or(0, |p| p.1)
    }

    /// Folds in another curve of the same site (another memory kind): the running maximum over both
    /// curves' points, a lower bound of their sum because the two kinds' highs need not coincide.
    pub fn merge(&mut self, other: &HighWater) {
        // Each point of a history is a new high, so observing one history's points again from
        // nothing gives them back unchanged (at most MAX_POINTS, none thinned): the fast paths for
        // the usual case, one side empty (each stack of a Python location folded into an empty
        // site, a million times in a PyTorch job's report).
        if other.points.is_empty() || self.points.is_empty() {
            if self.points.is_empty() {
                self.points.clone_from(&other.points);
            }
            self.gap_ns = 0;
            return;
        }
        let theirs = &other.points;
        // When mine had already reached their highest before their first point, every point of
        // theirs comes after a high at least as high and adds nothing: replaying would give mine
        // back. The usual case when the stacks of one Python location are folded into the site of
        // the heaviest, which sets the highs.
        let (first_t, top) = (theirs[0].0, theirs[theirs.len() - 1].1);
        let before = self.points.partition_point(|p| p.0 < first_t);
        if before > 0 && self.points[before - 1].1 >= top {
            self.gap_ns = 0;
            return;
        }
        // Both lists are in order (by time, then bytes): observed merged, as if sorted together.
        let mine = std::mem::take(&mut self.points);
        self.gap_ns = 0;
        let (mut i, mut j) = (0, 0);
        while i < mine.len() || j < theirs.len() {
            let next = if j == theirs.len() || (i < mine.len() && mine[i] <= theirs[j]) {
                i += 1;
                mine[i - 1]
            } else {
                j += 1;
                theirs[j - 1]
            };
            self.observe(next.0, next.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eighths of `[start, end]` that hold a point.
    fn eighths(h: &HighWater, start: u64, end: u64) -> Vec<u64> {
        let mut e: Vec<u64> = h
            .points
            .iter()
            .map(|&(t, _)| ((t - start) * 8 / (end - start + 1)).min(7))
            .collect();
        e.dedup();
        e
    }

    #[test]
    fn merging_with_an_empty_history_is_the_same_as_replaying_it() {
        let mut long = HighWater::default();
        for i in 1..=5_000u64 {
            long.observe(i * 1_000, i * 8);
        }
        let replayed = |h: &HighWater| {
            let mut r = HighWater::default();
            for &(t, live) in &h.points {
                r.observe(t, live);
            }
            r
        };
        let mut into_empty = HighWater::default();
        into_empty.merge(&long);
        assert_eq!(into_empty, replayed(&long));
        let mut with_empty = long.clone();
        with_empty.merge(&HighWater::default());
        assert_eq!(with_empty, replayed(&long));
    }

    #[test]
    fn a_long_steady_climb_stays_spread_over_its_whole_time() {
        let mut h = HighWater::default();
        // 20,000 new highs, one every 50 µs for a second.
        for i in 1..=20_000u64 {
            h.observe(i * 50_000, i * 4000);
        }
        assert!(h.points.len() <= MAX_POINTS, "{}", h.points.len());
        assert_eq!(h.points[0], (50_000, 4000));
        assert_eq!(h.high(), 80_000_000);
        assert_eq!(*h.points.last().unwrap(), (1_000_000_000, 80_000_000));
        assert_eq!(
            eighths(&h, 50_000, 1_000_000_000),
            (0..8).collect::<Vec<_>>()
        );
        // No two kept points closer than a sixty-fourth of the span, none further than a tenth.
        for w in h.points.windows(2) {
            let d = w[1].0 - w[0].0;
            assert!(
                (15_000_000..100_000_000).contains(&d),
                "{d} in {:?}",
                h.points
            );
        }
    }

    #[test]
    fn highs_only_rise_and_the_last_is_the_latest() {
        let mut h = HighWater::default();
        for i in 1..=5000u64 {
            // Rises and falls: only a new high is a point.
            h.observe(i * 1000, (i % 7) * 10 + i);
        }
        assert!(h
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        let value = |i: u64| (i % 7) * 10 + i;
        let top = (1..=5000u64)
            .max_by_key(|&i| (value(i), std::cmp::Reverse(i)))
            .unwrap();
        assert_eq!(*h.points.last().unwrap(), (top * 1000, value(top)));
    }

    #[test]
    fn merging_two_curves_keeps_the_running_maximum_spread() {
        let (mut a, mut b) = (HighWater::default(), HighWater::default());
        for i in 1..=3000u64 {
            a.observe(i * 100_000, i * 10);
            b.observe(i * 100_000 + 50_000, i * 10 + 5);
        }
        a.merge(&b);
        assert!(a.points.len() <= MAX_POINTS);
        assert_eq!(a.high(), 30_005);
        assert_eq!(
            eighths(&a, 100_000, 300_050_000),
            (0..8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_history_takes_no_more_room_than_a_vec() {
        // In place, the first point costs no room of its own (smallvec's `union` layout).
        assert_eq!(
            std::mem::size_of::<HighWater>(),
            std::mem::size_of::<Vec<(u64, u64)>>() + 8
        );
    }

    /// `b` merged into `a`, as observing both curves' points sorted together gives it.
    fn merged_by_sorting(a: &HighWater, b: &HighWater) -> HighWater {
        let mut sorted: Vec<(u64, u64)> = a.points.iter().chain(&b.points).copied().collect();
        sorted.sort_unstable();
        let mut expected = HighWater::default();
        for (t, live) in sorted {
            expected.observe(t, live);
        }
        expected
    }

    #[test]
    fn a_curve_below_highs_already_set_adds_nothing_and_one_above_them_does() {
        let curve = |points: &[(u64, u64)]| {
            let mut h = HighWater::default();
            points.iter().for_each(|&(t, b)| h.observe(t, b));
            h
        };
        let big = curve(&[(10, 100), (20, 300), (40, 500)]);
        for small in [
            // Under a high set before it: nothing added.
            curve(&[(25, 50), (30, 300)]),
            curve(&[(41, 500)]),
            // At the same time as the high it is under: sorting puts it first.
            curve(&[(20, 60)]),
            // Before every high, above a high set before it, or above the last: points added.
            curve(&[(5, 1)]),
            curve(&[(25, 50), (30, 301)]),
            curve(&[(50, 501)]),
        ] {
            let mut a = big.clone();
            a.merge(&small);
            assert_eq!(a, merged_by_sorting(&big, &small), "{:?}", small.points);
        }
        let mut a = big.clone();
        a.merge(&curve(&[(25, 50), (30, 300)]));
        assert_eq!(a.points, big.points);
    }

    #[test]
    fn merging_walks_both_curves_as_sorting_them_together_would() {
        // Curves with equal times and equal points between them, thinned and not.
        for (n, m, step) in [(5u64, 7u64, 3u64), (40, 3, 2), (900, 1200, 1), (64, 64, 5)] {
            let (mut a, mut b) = (HighWater::default(), HighWater::default());
            for i in 1..=n {
                a.observe(i * step * 1000, i * 7);
            }
            for i in 1..=m {
                b.observe(i * 2000, i * 5 + (i % 3));
            }
            let expected = merged_by_sorting(&a, &b);
            a.merge(&b);
            assert_eq!(a, expected, "{n} and {m} points");
        }
    }
}
