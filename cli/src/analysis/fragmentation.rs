//! Host heap fragmentation from the sampled C-library statistics: bytes the allocator holds free
//! inside its arenas (it cannot give them back while live blocks sit above them), their share of the
//! arena, and the resident set against the live heap; `holes` names the size classes behind them.
use memshim_trace::HeapStats;

use super::holes::Holes;

/// The fragmentation analysis state.
#[derive(Default, Debug)]
pub struct Fragmentation {
    /// Samples seen.
    pub samples: u64,
    /// The sample with the most free bytes held.
    pub worst: Option<(u64, HeapStats)>,
    /// The largest arena.
    pub peak_arena: u64,
    /// The largest resident set.
    pub peak_rss: u64,
    /// The resident set at the latest sample (what `memshim top` shows as now).
    pub last_rss: u64,
    /// Freed blocks not reused, and the size classes of the holes at the worst sample.
    pub holes: Holes,
}

impl Fragmentation {
    /// A sample taken at `t`, with the live heap blocks as (address, size) at that moment.
    pub fn sample<I: Iterator<Item = (u64, u64)>>(
        &mut self,
        t: u64,
        s: &HeapStats,
        live: impl FnOnce() -> I,
    ) {
        self.samples += 1;
        self.peak_arena = self.peak_arena.max(s.arena);
        self.peak_rss = self.peak_rss.max(s.rss);
        self.last_rss = s.rss;
        // The free bytes that could not be returned: free minus the releasable top.
        let held = s.free.saturating_sub(s.releasable);
        if self
            .worst
            .as_ref()
            .is_none_or(|(_, w)| held > w.free.saturating_sub(w.releasable))
        {
            self.worst = Some((t, s.clone()));
            self.holes.peak(held, live());
        }
    }

    /// Free bytes held (not returnable) at the worst sample, and their share of the arena.
    pub fn worst_held(&self) -> (u64, f64) {
        match &self.worst {
            Some((_, s)) => {
                let held = s.free.saturating_sub(s.releasable);
                (
                    held,
                    if s.arena > 0 {
                        held as f64 / s.arena as f64
                    } else {
                        0.0
                    },
                )
            }
            None => (0, 0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(arena: u64, free: u64, releasable: u64) -> HeapStats {
        HeapStats {
            arena,
            in_use: arena - free,
            free,
            mmapped: 0,
            releasable,
            rss: arena,
        }
    }

    #[test]
    fn the_worst_sample_is_the_most_held_free_memory() {
        let mut f = Fragmentation::default();
        let none = std::iter::empty;
        f.sample(1, &stats(1000, 100, 90), none);
        f.sample(2, &stats(2000, 800, 0), none);
        f.sample(3, &stats(1500, 900, 800), none);
        assert_eq!(f.samples, 3);
        assert_eq!(f.worst.as_ref().unwrap().0, 2);
        assert_eq!(f.worst_held(), (800, 0.4));
        assert_eq!(f.peak_arena, 2000);
        assert_eq!(f.last_rss, 1500, "the latest sample's");
    }
}
