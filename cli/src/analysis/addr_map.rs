//! A map keyed by address for the per-event lookups of the heap analyses (live blocks, freed
//! blocks). Those maps hold the live set, larger than the cache, and their probes were most of a
//! replay's time, each one a cache miss. Here an entry sits in one flat array at a place computed
//! from its address alone (open addressing, linear probing), so the replay can
//! [`prefetch`](AddrMap::prefetch) it several events before it is needed.
//!
//! The table stays at most half full, so a lookup reads one or two neighbouring entries, and it
//! only grows: memory follows the largest number of entries held at once.

/// Multiplier of Fibonacci hashing: the high bits of `addr * K` spread aligned addresses evenly.
const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// The smallest table allocated.
const MIN_SLOTS: usize = 16;

/// Values by address.
#[derive(Clone, Debug, Default)]
pub struct AddrMap<V> {
    /// (address, value); address 0 marks an empty slot (the entry for 0 itself is `zero`).
    slots: Vec<(u64, V)>,
    zero: Option<V>,
    /// Entries in `slots`.
    len: usize,
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

    /// The slot where the search for `addr` starts (the table is not empty).
    fn home(&self, addr: u64) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (addr.wrapping_mul(K) >> (64 - bits)) as usize
    }

    /// The slot holding `addr`, or the empty one where it would go.
    fn find(&self, addr: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = self.home(addr);
        while self.slots[i].0 != addr && self.slots[i].0 != 0 {
            i = (i + 1) & mask;
        }
        i
    }

    /// Hints the processor to fetch the entry of `addr` into the cache now, so that a lookup a few
    /// events later does not wait for memory.
    pub fn prefetch(&self, addr: u64) {
        if !self.slots.is_empty() {
            super::prefetch::prefetch(&self.slots[self.home(addr)]);
        }
    }

    /// The value of `addr`.
    pub fn get(&self, addr: u64) -> Option<&V> {
        if addr == 0 {
            return self.zero.as_ref();
        }
        if self.slots.is_empty() {
            return None;
        }
        let slot = &self.slots[self.find(addr)];
        (slot.0 == addr).then_some(&slot.1)
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
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let i = self.find(addr);
        if self.slots[i].0 == addr {
            return Some(std::mem::replace(&mut self.slots[i].1, value));
        }
        self.slots[i] = (addr, value);
        self.len += 1;
        None
    }

    /// Takes the value of `addr` out.
    pub fn remove(&mut self, addr: u64) -> Option<V> {
        if addr == 0 {
            return self.zero.take();
        }
        if self.slots.is_empty() {
            return None;
        }
        let mut hole = self.find(addr);
        if self.slots[hole].0 != addr {
            return None;
        }
        let value = self.slots[hole].1;
        self.len -= 1;
        // Backward-shift deletion: move up each later entry of the run whose search would pass the
        // hole, so no search stops early at it (no tombstones to clean up later).
        let mask = self.slots.len() - 1;
        let mut i = hole;
        loop {
            i = (i + 1) & mask;
            let key = self.slots[i].0;
            if key == 0 {
                break;
            }
            // The entry at `i` may move to `hole` when its home is not in (hole, i], cyclically.
            let home = self.home(key);
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[i];
                hole = i;
            }
        }
        self.slots[hole] = (0, V::default());
        Some(value)
    }

    /// Every entry as (address, value), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> + '_ {
        let zero = self.zero.as_ref().map(|v| (0, v));
        self.slots
            .iter()
            .filter(|s| s.0 != 0)
            .map(|s| (s.0, &s.1))
            .chain(zero)
    }

    /// Doubles the table and places every entry again.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![(0, V::default()); size]);
        for (addr, value) in old.into_iter().filter(|s| s.0 != 0) {
            let i = self.find(addr);
            self.slots[i] = (addr, value);
        }
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
        }
        let mut all: Vec<(u64, u64)> = m.iter().map(|(a, &v)| (a, v)).collect();
        let mut want: Vec<(u64, u64)> = reference.into_iter().collect();
        all.sort_unstable();
        want.sort_unstable();
        assert_eq!(all, want);
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
