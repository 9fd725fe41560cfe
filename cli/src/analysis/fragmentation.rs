//! Host heap fragmentation from the sampled C-library statistics: bytes the allocator holds free
//! inside its arenas (it cannot give them back while live blocks sit above them), their share of the
//! arena, and the resident set against the live heap; `holes` names the size classes behind them.
//!
//! Free memory counts as held when two samples in a row found it so: between a burst of frees and
//! the allocations that reuse their memory, one sample can see the freed bytes not yet reused, which
//! is no fragmentation (a program that frees and reallocates in place showed 10 MB "held" in one
//! sample of three runs when the machine was busy).
use memshim_trace::HeapStats;

use super::holes::Holes;

/// The fragmentation analysis state.
#[derive(Default, Debug)]
pub struct Fragmentation {
    /// Samples seen.
    pub samples: u64,
    /// The sample with the most free bytes held, as the lower of its own and the sample's before.
    pub worst: Option<(u64, HeapStats)>,
    /// Those bytes.
    worst_held: u64,
    /// The free bytes held at the latest sample.
    last_held: Option<u64>,
    /// The largest arena.
    pub peak_arena: u64,
    /// The largest resident set.
    pub peak_rss: u64,
    /// The resident set at the latest sample (what `memshim top` shows as now).
    pub last_rss: u64,
    /// The size classes of the holes at the worst sample.
    pub holes: Holes,
}

impl Fragmentation {
    /// A sample taken at `t`, with the heap's blocks at that moment: the freed ones no allocation
    /// reused and the live ones, as (address, size).
    pub fn sample<F, L>(&mut self, t: u64, s: &HeapStats, blocks: impl FnOnce() -> (F, L))
    where
        F: Iterator<Item = (u64, u64)>,
        L: Iterator<Item = (u64, u64)>,
    {
        self.samples += 1;
        self.peak_arena = self.peak_arena.max(s.arena);
        self.peak_rss = self.peak_rss.max(s.rss);
        self.last_rss = s.rss;
        // The free bytes that could not be returned: free minus the releasable top, and of those
        // what the sample before held too.
        let now = s.free.saturating_sub(s.releasable);
        let Some(before) = self.last_held.replace(now) else {
            return;
        };
        let held = now.min(before);
        if self.worst.is_none() || held > self.worst_held {
            self.worst = Some((t, s.clone()));
            self.worst_held = held;
            let (freed, live) = blocks();
            self.holes.peak(held, freed, live);
        }
    }

    /// Free bytes held (not returnable) at the worst sample, and their share of the arena.
    pub fn worst_held(&self) -> (u64, f64) {
        match &self.worst {
            Some((_, s)) => {
                let held = self.worst_held;
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
    fn the_worst_sample_is_the_most_free_memory_held_two_samples_in_a_row() {
        let mut f = Fragmentation::default();
        let none = || (std::iter::empty(), std::iter::empty());
        f.sample(1, &stats(1000, 100, 90), none);
        f.sample(2, &stats(2000, 800, 0), none);
        f.sample(3, &stats(2000, 700, 0), none);
        f.sample(4, &stats(1500, 900, 800), none);
        assert_eq!(f.samples, 4);
        // 800 then 700 held: 700 was held across both.
        assert_eq!(f.worst.as_ref().unwrap().0, 3);
        assert_eq!(f.worst_held(), (700, 0.35));
        assert_eq!(f.peak_arena, 2000);
        assert_eq!(f.last_rss, 1500, "the latest sample's");
    }

    #[test]
    fn free_memory_seen_held_in_one_sample_alone_is_not_held() {
        let mut f = Fragmentation::default();
        let none = || (std::iter::empty(), std::iter::empty());
        // A burst of frees seen once, reused by the next sample.
        f.sample(1, &stats(4000, 10, 0), none);
        f.sample(2, &stats(4000, 3000, 0), none);
        f.sample(3, &stats(4000, 20, 0), none);
        // What samples 2 and 3 both held, not the burst.
        assert_eq!(f.worst_held().0, 20);
    }
}
