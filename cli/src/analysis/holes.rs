//! Which allocation sizes leave the holes behind external fragmentation.
//!
//! glibc gives memory back to the system only from the top of an arena (and whole free pages it
//! trims with `malloc_trim`), so a freed block is a hole that the allocator holds, and the system
//! still counts, while a live block sits above it in the same arena. The replay keeps every freed
//! block that no allocation has reused since (by address, in `live_blocks`); when the sampled heap statistics reach a
//! new peak of free-held bytes, it takes the live blocks, sorted by address, and counts as holes the
//! freed blocks that overlap no live block and have a live block less than 64 MiB above them (arenas
//! grow upward; the main arena is contiguous and a thread arena's heap is at most 64 MiB, so a live
//! block that close above is in the same arena, or at worst the next heap; `neighbours` finds those
//! live blocks without sorting the live set). The holes are grouped by
//! the power-of-two size class of the block whose free left them: the class whose blocks were freed
//! among longer-lived neighbours comes first.
//!
//! It is an estimate from the program's side: neighbouring holes that glibc coalesced are counted by
//! the blocks that were freed, chunk headers are left out, and blocks of 128 KiB or more (glibc's
//! default mmap threshold: mapped, and unmapped on free) are not holes. A snapshot is retaken only when
//! the peak grew by a tenth since the last one, so the classes describe a moment within 10% of the peak.
//!
//! Never: follows more than [`MAX_FREED`] freed blocks (beyond that, later frees are not followed)
//! or costs anything per event; the sort happens only at a new peak.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

/// Freed blocks followed at most.
pub const MAX_FREED: usize = 1 << 18;
/// Blocks this large are mapped on their own by glibc (its default threshold), not carved from an arena.
const MMAP_THRESHOLD: u64 = 128 << 10;
/// How far above a hole a live block still holds it: glibc's HEAP_MAX_SIZE on 64-bit.
const REGION: u64 = 64 << 20;
/// Size classes kept per snapshot.
const CLASSES: usize = 10;

/// The holes of one size class at the snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassHoles {
    /// The class holds sizes in (`max_bytes` / 2, `max_bytes`].
    pub max_bytes: u64,
    /// Bytes of the freed blocks that are holes, and how many.
    pub hole_bytes: u64,
    pub holes: u64,
    /// The most frequent size among them.
    pub common_size: u64,
}

/// True when a freed block of `size` bytes can be a hole, so is worth following: not empty, and
/// carved from an arena rather than mapped on its own.
pub fn follows(size: u64) -> bool {
    size > 0 && size < MMAP_THRESHOLD
}

/// The state. The freed blocks themselves are kept with the live ones (`live_blocks`), where an
/// allocation or free finds both in one lookup.
#[derive(Debug, Default)]
pub struct Holes {
    /// The classes at the last snapshot, most hole bytes first, and the free-held bytes it was taken at.
    pub classes: Vec<ClassHoles>,
    pub snapshot_held: u64,
}

impl Holes {
    /// The heap statistics show `held` free bytes, a new peak: retake the snapshot when it grew by a
    /// tenth, from the freed blocks no allocation reused since and the live blocks, both as
    /// (address, size).
    pub fn peak(
        &mut self,
        held: u64,
        freed: impl Iterator<Item = (u64, u64)>,
        live: impl Iterator<Item = (u64, u64)>,
    ) {
        if held == 0 || held < self.snapshot_held + self.snapshot_held / 10 {
            return;
        }
        self.snapshot_held = held;
        let mut freed: Vec<(u64, u64)> = freed.collect();
        freed.sort_unstable();
        let asked: Vec<u64> = freed.iter().map(|f| f.0).collect();
        let near = super::neighbours::nearest(&asked, live);
        let is_hole = |a: u64, size: u64, near: &super::neighbours::Nearest| {
            let clear_below = near.below.is_none_or(|b| b.0 + b.1 <= a);
            let held_above = near.above.is_some_and(|b| b >= a + size && b - a < REGION);
            clear_below && held_above
        };
        let mut by_class: BTreeMap<u64, (u64, u64, HashMap<u64, u64>)> = BTreeMap::new();
        for (&(a, size), near) in freed.iter().zip(&near) {
            if !is_hole(a, size, near) {
                continue;
            }
            let c = by_class.entry(size.next_power_of_two()).or_default();
            c.0 += size;
            c.1 += 1;
            *c.2.entry(size).or_default() += 1;
        }
        let mut classes: Vec<ClassHoles> = by_class
            .into_iter()
            .map(|(max_bytes, (hole_bytes, holes, sizes))| ClassHoles {
                max_bytes,
                hole_bytes,
                holes,
                // The most frequent; the smaller size on a tie, so the answer does not depend on
                // the map's order.
                common_size: sizes
                    .into_iter()
                    .max_by_key(|&(s, n)| (n, std::cmp::Reverse(s)))
                    .map_or(0, |(s, _)| s),
            })
            .collect();
        classes.sort_by_key(|c| (std::cmp::Reverse(c.hole_bytes), c.max_bytes));
        classes.truncate(CLASSES);
        self.classes = classes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_blocks_between_live_ones_are_holes_by_class() {
        let mut h = Holes::default();
        let mut freed = Vec::new();
        let base = 10 * REGION;
        // 1000-byte blocks every 1024 bytes; every other one freed; 3000-byte ones above them.
        let mut live = Vec::new();
        for i in 0..100u64 {
            let a = base + i * 1024;
            if i % 2 == 0 {
                freed.push((a, 1000));
            } else {
                live.push((a, 1000));
            }
        }
        for i in 0..10u64 {
            live.push((base + 200_000 + i * 3072, 3000));
        }
        // A freed block reused by a larger one that starts before it is no hole.
        freed.push((base + 150_000, 500));
        live.push((base + 149_900, 4000));
        // A freed block above every live one is the top of the arena: returnable, no hole.
        freed.push((base + 1_000_000, 2000));
        // A large block is mapped on its own: not followed.
        assert!(!follows(1 << 20) && !follows(0) && follows(1));
        h.peak(60_000, freed.iter().copied(), live.iter().copied());
        assert_eq!(
            h.classes,
            [ClassHoles {
                max_bytes: 1024,
                hole_bytes: 50_000,
                holes: 50,
                common_size: 1000
            }]
        );
        // A peak less than a tenth higher keeps the snapshot.
        live.retain(|b| b.0 != base + 200_000);
        freed.push((base + 200_000, 3000));
        h.peak(65_000, freed.iter().copied(), live.iter().copied());
        assert_eq!(h.classes.len(), 1);
        h.peak(70_000, freed.iter().copied(), live.iter().copied());
        assert_eq!(h.classes[1].max_bytes, 4096);
    }
}
