//! The thin sampling mode's heap totals: the shim counted every allocation and free in the process
//! and recorded only the sampled ones as events, so totals, live bytes and leak totals come from its
//! running counts (live bytes as usable sizes: a free does not say how much was asked for), and the
//! peak and the timeline from its readings about every 100 ms.
use memshim_trace::HeapTotals;

use super::timeline::Series;

/// What the counts say.
#[derive(Clone, Debug, Default)]
pub struct Counted {
    /// The counts when the trace began (a fork child's inheritance, or nothing).
    pub first: HeapTotals,
    /// The latest counts.
    pub last: HeapTotals,
    /// The most usable bytes live at any reading, and when.
    pub peak_usable: u64,
    pub peak_t: u64,
    /// Usable bytes live at each reading.
    pub series: Series,
}

impl Counted {
    /// A trace's first counts: the baseline.
    pub fn new(t: u64, first: HeapTotals) -> Counted {
        let mut c = Counted {
            first: first.clone(),
            ..Counted::default()
        };
        c.reading(t, first);
        c
    }

    /// A reading of the running counts at `t`.
    pub fn reading(&mut self, t: u64, now: HeapTotals) {
        let live = now.live_usable();
        if live > self.peak_usable {
            self.peak_usable = live;
            self.peak_t = t;
        }
        self.series.push(t, live);
        self.last = now;
    }

    /// Allocations since the trace began.
    pub fn allocations(&self) -> u64 {
        self.last.allocations.saturating_sub(self.first.allocations)
    }

    /// Frees since the trace began.
    pub fn frees(&self) -> u64 {
        self.last.frees.saturating_sub(self.first.frees)
    }

    /// Bytes asked for since the trace began.
    pub fn allocated_bytes(&self) -> u64 {
        self.last
            .allocated_bytes
            .saturating_sub(self.first.allocated_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(
        allocations: u64,
        frees: u64,
        allocated_usable: u64,
        freed_usable: u64,
    ) -> HeapTotals {
        HeapTotals {
            allocations,
            frees,
            allocated_bytes: allocations * 10,
            allocated_usable,
            freed_usable,
        }
    }

    #[test]
    fn counts_since_the_baseline_and_live_bytes_over_everything() {
        // A fork child that inherited 5 blocks (120 B) live.
        let mut c = Counted::new(10, totals(7, 2, 168, 48));
        c.reading(20, totals(107, 52, 2568, 1248)); // 1320 live
        c.reading(30, totals(110, 100, 2640, 2400)); // 240 live
        assert_eq!(
            (c.allocations(), c.frees(), c.allocated_bytes()),
            (103, 98, 1030)
        );
        assert_eq!((c.last.live_usable(), c.last.live_count()), (240, 10));
        assert_eq!((c.peak_usable, c.peak_t), (1320, 20));
        assert_eq!(c.series.points(), &[(10, 120), (20, 1320), (30, 240)]);
    }
}
