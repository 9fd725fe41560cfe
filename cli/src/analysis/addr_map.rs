//! A map keyed by address for the per-event lookups of the heap analyses (live blocks, freed
//! blocks). Those maps hold the live set, larger than the cache, and their probes were most of a
//! replay's time, each one a cache miss. Here an entry sits in a flat array at a place computed
//! from its address alone (open addressing, linear probing), so the replay can
//! [`prefetch`](AddrMap::prefetch) it several events before it is needed; neighbouring addresses
//! get neighbouring places (see [`GROUP_BITS`]).
//!
//! Memory is what bounds a replay of millions of live blocks, so the map is kept full: the entries
//! are split by hash into [`SEGMENTS`] tables that each grow on their own, by a quarter, once four
//! fifths full. A table of any size works because the slot is the hash scaled to it (a multiply,
//! not a mask), so the map holds between 64% and 80% of its slots, and growing copies one segment at
//! a time: the old and new arrays of a single segment are all that is ever held twice. It only
//! grows: memory follows the largest number of entries held at once.
//!
//! Never: keep tombstones (a removal shifts the entries after it back), or rehash everything at once.

/// Multiplier of Fibonacci hashing: the high bits of `group * K` spread address groups evenly.
const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// The hash's top bits pick a segment.
const SEGMENT_BITS: u32 = 6;
/// Tables the entries are split into.
pub const SEGMENTS: usize = 1 << SEGMENT_BITS;
/// The smallest table of a segment.
const MIN_SLOTS: usize = 8;

/// One segment: (address, value) slots, address 0 marking an empty one.
#[derive(Clone, Debug, Default)]
struct Segment<V> {
    slots: Vec<(u64, V)>,
    len: usize,
}

/// Values by address.
#[derive(Clone, Debug, Default)]
pub struct AddrMap<V> {
    /// Empty until the first entry; then [`SEGMENTS`] of them.
    segments: Vec<Segment<V>>,
    /// The entry for address 0 (which marks empty slots).
    zero: Option<V>,
    /// Entries in `segments`.
    len: usize,
}

/// Addresses are hashed by groups of this many bytes (the low bits dropped), and the blocks of one
/// group sit in neighbouring slots, by their offset in it: blocks allocated one after another at
/// neighbouring addresses, as an allocator hands them out, then share cache lines and pages of the
/// table, instead of each costing its own miss.
const GROUP_BITS: u32 = 8;
/// The offset bits: blocks are 16-byte aligned.
const OFFSET_BITS: u32 = GROUP_BITS - 4;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

/// The segment of `addr`'s group and the hash bits left for the slot within it, with the address's
/// offset in its group in the low [`OFFSET_BITS`] (which scaling the hash to a table leaves alone).
fn split(addr: u64) -> (usize, u64) {
    let h = (addr >> GROUP_BITS).wrapping_mul(K);
    let seg = (h >> (64 - SEGMENT_BITS)) as usize;
    let offset = (addr >> 4) & OFFSET_MASK;
    (seg, ((h << SEGMENT_BITS) & !OFFSET_MASK) | offset)
}

/// The slot of a table of `n` slots where the search for hash bits `h` starts: the group's place
/// plus the offset in it.
fn home(h: u64, n: usize) -> usize {
    let group = ((u128::from(h & !OFFSET_MASK) * n as u128) >> 64) as usize;
    let i = group + (h & OFFSET_MASK) as usize;
    // Past the end (a small table): around to the start, as the search goes.
    if i >= n {
        i % n
    } else {
        i
    }
}

impl<V: Copy + Default> Segment<V> {
    /// The slot holding `addr` (hash bits `h`), or the empty one where it would go (not full).
    fn find(&self, addr: u64, h: u64) -> usize {
        let n = self.slots.len();
        let mut i = home(h, n);
        loop {
            let key = self.slots[i].0;
            if key == addr || key == 0 {
                return i;
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }

    /// Grows the table by a quarter and places every entry again.
    fn grow(&mut self) {
        let n = self.slots.len();
        let size = (n + n / 4).max(n + MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![(0, V::default()); size]);
        for (addr, value) in old.into_iter().filter(|s| s.0 != 0) {
            let i = self.find(addr, split(addr).1);
            self.slots[i] = (addr, value);
        }
    }

    /// True when one more entry would fill more than four fifths of the table.
    fn is_full(&self) -> bool {
        5 * (self.len + 1) > 4 * self.slots.len()
    }

    fn remove(&mut self, addr: u64, h: u64) -> Option<V> {
        if self.slots.is_empty() {
            return None;
        }
        let mut hole = self.find(addr, h);
        if self.slots[hole].0 != addr {
            return None;
        }
        let value = self.slots[hole].1;
        self.len -= 1;
        // Backward-shift deletion: move up each later entry of the run whose search would pass the
        // hole, so no search stops early at it.
        let n = self.slots.len();
        let behind = |from: usize, to: usize| if to >= from { to - from } else { to + n - from };
        let mut i = hole;
        loop {
            i = if i + 1 == n { 0 } else { i + 1 };
            let key = self.slots[i].0;
            if key == 0 {
                break;
            }
            // The entry at `i` may move to `hole` when its home is not in (hole, i], cyclically.
            let start = home(split(key).1, n);
            if behind(start, i) >= behind(hole, i) {
                self.slots[hole] = self.slots[i];
                hole = i;
            }
        }
        self.slots[hole] = (0, V::default());
        Some(value)
    }
}

impl<V: Copy + Default> AddrMap<V> {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.len + usize::from(self.zero.is_some())
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots allocated, all segments together: what the map costs is this many (address, value).
    pub fn slots(&self) -> usize {
        self.segments.iter().map(|s| s.slots.len()).sum()
    }

    /// Hints the processor to fetch the entry of `addr` into the cache now, so that a lookup a few
    /// events later does not wait for memory.
    pub fn prefetch(&self, addr: u64) {
        if self.len == 0 {
            return;
        }
        let (seg, h) = split(addr);
        if let Some(s) = self.segments.get(seg).filter(|s| !s.slots.is_empty()) {
            super::prefetch::prefetch(&s.slots[home(h, s.slots.len())]);
        }
    }

    /// The value of `addr`.
    pub fn get(&self, addr: u64) -> Option<&V> {
        if addr == 0 {
            return self.zero.as_ref();
        }
        let (seg, h) = split(addr);
        let s = self.segments.get(seg).filter(|s| !s.slots.is_empty())?;
        let slot = &s.slots[s.find(addr, h)];
        (slot.0 == addr).then_some(&slot.1)
    }

    /// The value of `addr`, to change in place.
    pub fn get_mut(&mut self, addr: u64) -> Option<&mut V> {
        if addr == 0 {
            return self.zero.as_mut();
        }
        let (seg, h) = split(addr);
        let s = self.segments.get_mut(seg).filter(|s| !s.slots.is_empty())?;
        let i = s.find(addr, h);
        let slot = &mut s.slots[i];
        (slot.0 == addr).then_some(&mut slot.1)
    }

    /// True when `addr` has a value.
    pub fn contains_key(&self, addr: u64) -> bool {
        self.get(addr).is_some()
    }

    /// Sets the value of `addr`; returns the one it replaces.
    pub fn insert(&mut self, addr: u64, value: V) -> Option<V> {
        if addr == 0 {
            return self.zero.replace(value);
        }
        if self.segments.is_empty() {
            self.segments = vec![Segment::default(); SEGMENTS];
        }
        let (seg, h) = split(addr);
        let s = &mut self.segments[seg];
        if s.is_full() {
            s.grow();
        }
        let i = s.find(addr, h);
        if s.slots[i].0 == addr {
            return Some(std::mem::replace(&mut s.slots[i].1, value));
        }
        s.slots[i] = (addr, value);
        s.len += 1;
        self.len += 1;
        None
    }

    /// Takes the value of `addr` out.
    pub fn remove(&mut self, addr: u64) -> Option<V> {
        if addr == 0 {
            return self.zero.take();
        }
        if self.len == 0 {
            return None;
        }
        let (seg, h) = split(addr);
        let value = self.segments.get_mut(seg)?.remove(addr, h)?;
        self.len -= 1;
        Some(value)
    }

    /// Every entry as (address, value), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> + '_ {
        let zero = self.zero.as_ref().map(|v| (0, v));
        self.segments
            .iter()
            .flat_map(|s| s.slots.iter())
            .filter(|s| s.0 != 0)
            .map(|s| (s.0, &s.1))
            .chain(zero)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    #[test]
    fn behaves_as_a_hash_map_through_growth_collisions_and_removal() {
        let mut m = AddrMap::<u64>::default();
        let mut reference = FxHashMap::<u64, u64>::default();
        // A fixed pseudo-random sequence of inserts and removes over a small address range, so
        // that runs collide, wrap around the end of the table and are shifted back by removals.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = (x % 3000) * 16;
            if x & 0x300 == 0 {
                assert_eq!(m.remove(addr), reference.remove(&addr), "step {step}");
            } else {
                assert_eq!(m.insert(addr, step), reference.insert(addr, step));
            }
            m.prefetch(addr);
            assert_eq!(m.len(), reference.len());
        }
        for a in 0..3001u64 {
            assert_eq!(m.get(a * 16), reference.get(&(a * 16)));
            if let Some(v) = m.get_mut(a * 16) {
                *v += 1;
                *reference.get_mut(&(a * 16)).unwrap() += 1;
            }
            assert_eq!(m.get(a * 16), reference.get(&(a * 16)));
        }
        let mut all: Vec<(u64, u64)> = m.iter().map(|(a, &v)| (a, v)).collect();
        let mut want: Vec<(u64, u64)> = reference.into_iter().collect();
        all.sort_unstable();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn stays_between_64_and_80_percent_full_as_it_grows() {
        let mut m = AddrMap::<u64>::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 1..=300_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Heap-like addresses: 16-byte aligned, dense in a few regions.
            let addr = (x & 0x3ff_fff0) | ((x >> 60) << 40);
            m.insert(addr, i);
            if i % 1000 == 0 && m.len() > 100 * SEGMENTS {
                let (len, slots) = (m.len(), m.slots());
                assert!(5 * len <= 4 * slots, "{len} in {slots}: over 80% full");
                // Each segment is at least 64% full right after it grew (plus rounding).
                assert!(100 * len >= 60 * slots, "{len} in {slots}: under 60% full");
            }
        }
        let live: Vec<u64> = m.iter().map(|(a, _)| a).collect();
        assert_eq!(live.len(), m.len());
        for a in live {
            assert!(m.remove(a).is_some());
        }
        assert!(m.is_empty());
        assert_eq!(m.iter().count(), 0);
    }

    #[test]
    fn address_zero_is_an_ordinary_key() {
        let mut m = AddrMap::<u32>::default();
        assert_eq!(m.get(0), None);
        assert_eq!(m.remove(0), None);
        assert_eq!(m.insert(0, 5), None);
        assert_eq!(m.insert(0, 6), Some(5));
        assert!(m.contains_key(0));
        assert_eq!(m.len(), 1);
        assert_eq!(m.iter().collect::<Vec<_>>(), [(0, &6)]);
        assert_eq!(m.remove(0), Some(6));
        assert_eq!(m.len(), 0);
    }
}
