//! Values by stack id: what the analyses and reports keep per call site (see [`SiteTable`]) or per
//! stack (a stack's Python location, its site), in a table indexed by the id itself where the ids
//! are dense and in a hash map where they are not.
//!
//! The host heap of a PyTorch job has a million sites, one per stack, and the trace numbers its
//! stacks 0, 1, 2... in the order they were first seen, so the heap's sites are nearly every id:
//! a slot per id is one cache miss an allocation where a hash map took two (its control bytes,
//! then the entry), grows by `realloc` instead of rehashing, and holds no empty buckets. A device
//! heap's few hundred sites are scattered over the same million ids: those stay in the map, so
//! the table never holds more than about four slots per id it has.
//!
//! It must never iterate in an order a report depends on: callers sort what they show.
use rustc_hash::FxHashMap as HashMap;

use super::SiteStats;

/// Sites by stack id.
pub type SiteTable = IdTable<SiteStats>;

/// Slots kept per id present, at most, before ids go to the map instead.
const SLOTS_PER_SITE: usize = 4;
/// Slots a table may hold whatever its count: small tables stay in slots.
const SLACK_SLOTS: usize = 1024;

/// Values keyed by stack id (see the module's doc).
#[derive(Clone, Debug)]
pub struct IdTable<V> {
    /// Values by id below `slots.len()`; an id whose bit in `present` is clear holds a default.
    slots: Vec<V>,
    present: Vec<u64>,
    /// Values of ids beyond the slots.
    sparse: HashMap<u32, V>,
    len: usize,
}

impl<V> Default for IdTable<V> {
    fn default() -> IdTable<V> {
        IdTable {
            slots: Vec::new(),
            present: Vec::new(),
            sparse: HashMap::default(),
            len: 0,
        }
    }
}

impl<V: Default> IdTable<V> {
    /// An empty table with slots for ids below `ids`.
    pub fn with_ids(ids: usize) -> IdTable<V> {
        let mut t = IdTable::default();
        t.slots.resize_with(ids, V::default);
        t.present.resize(ids.div_ceil(64), 0);
        t
    }

    /// Ids present.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, id: &u32) -> Option<&V> {
        let i = *id as usize;
        if i < self.slots.len() {
            return self.is_present(i).then(|| &self.slots[i]);
        }
        self.sparse.get(id)
    }

    pub fn get_mut(&mut self, id: &u32) -> Option<&mut V> {
        let i = *id as usize;
        if i < self.slots.len() {
            return self.is_present(i).then(|| &mut self.slots[i]);
        }
        self.sparse.get_mut(id)
    }

    pub fn contains_key(&self, id: &u32) -> bool {
        self.get(id).is_some()
    }

    /// The value of `id`, made the default if it was not present.
    pub fn get_or_default(&mut self, id: u32) -> &mut V {
        let i = id as usize;
        if i >= self.slots.len() {
            self.grow_for(i);
        }
        if i < self.slots.len() {
            if !self.is_present(i) {
                self.present[i / 64] |= 1 << (i % 64);
                self.len += 1;
            }
            return &mut self.slots[i];
        }
        let len = &mut self.len;
        self.sparse.entry(id).or_insert_with(|| {
            *len += 1;
            V::default()
        })
    }

    /// Puts `value` at `id`, replacing what was there.
    pub fn insert(&mut self, id: u32, value: V) {
        *self.get_or_default(id) = value;
    }

    /// The values present as (stack id, value): slots in id order, then the map's in no order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &V)> + '_ {
        let slots = self
            .present
            .iter()
            .enumerate()
            .flat_map(|(w, &bits)| SetBits(bits).map(move |b| w * 64 + b))
            .map(|i| (i as u32, &self.slots[i]));
        slots.chain(self.sparse.iter().map(|(&id, s)| (id, s)))
    }

    /// As [`IdTable::iter`], to change the values in place.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut V)> + '_ {
        let present = &self.present;
        let slots = self
            .slots
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| present[i / 64] & (1 << (i % 64)) != 0)
            .map(|(i, s)| (i as u32, s));
        slots.chain(self.sparse.iter_mut().map(|(&id, s)| (id, s)))
    }

    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter().map(|(id, _)| id)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, s)| s)
    }

    fn is_present(&self, i: usize) -> bool {
        self.present[i / 64] & (1 << (i % 64)) != 0
    }

    /// Gives slots to ids up to `i` when the table stays dense enough; otherwise `i` goes to the
    /// map. Sites of the map that the new slots cover move into them.
    fn grow_for(&mut self, i: usize) {
        // A quarter more each time, not double: the slots are most of a report's memory when a
        // job has a million sites, and a large block grows by `mremap` without copying.
        let want = (i + 1).max(self.slots.len() + self.slots.len() / 4).max(64);
        let limit = (self.len + 1) * SLOTS_PER_SITE + SLACK_SLOTS;
        let want = if want <= limit {
            want
        } else if i < limit {
            limit
        } else {
            return;
        };
        self.slots.reserve_exact(want - self.slots.len());
        self.slots.resize_with(want, V::default);
        self.present.resize(want.div_ceil(64), 0);
        if self.sparse.is_empty() {
            return;
        }
        let moved: Vec<u32> = self
            .sparse
            .keys()
            .copied()
            .filter(|&id| (id as usize) < want)
            .collect();
        for id in moved {
            if let Some(s) = self.sparse.remove(&id) {
                let i = id as usize;
                self.present[i / 64] |= 1 << (i % 64);
                self.slots[i] = s;
            }
        }
    }
}

/// The positions of a word's set bits, lowest first.
struct SetBits(u64);

impl Iterator for SetBits {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(b)
    }
}

impl<V: Default> std::ops::Index<&u32> for IdTable<V> {
    type Output = V;

    fn index(&self, id: &u32) -> &V {
        match self.get(id) {
            Some(s) => s,
            None => panic!("nothing for stack {id}"),
        }
    }
}

impl<V: Default> FromIterator<(u32, V)> for IdTable<V> {
    fn from_iter<I: IntoIterator<Item = (u32, V)>>(iter: I) -> IdTable<V> {
        let mut t = IdTable::default();
        for (id, s) in iter {
            t.insert(id, s);
        }
        t
    }
}

impl<V: Default + PartialEq> PartialEq for IdTable<V> {
    fn eq(&self, other: &IdTable<V>) -> bool {
        self.len == other.len && self.iter().all(|(id, s)| other.get(&id) == Some(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(bytes: u64) -> SiteStats {
        SiteStats {
            allocations: 1,
            live_bytes: bytes,
            ..SiteStats::default()
        }
    }

    #[test]
    fn dense_ids_take_slots_and_scattered_ones_the_map() {
        let mut t = SiteTable::default();
        for id in 0..5000 {
            t.get_or_default(id).live_bytes = id as u64;
        }
        assert_eq!((t.len(), t.sparse.len()), (5000, 0));
        // Far beyond four slots a site: kept aside, not given a hundred million slots.
        t.insert(100_000_000, site(7));
        t.insert(memshim_trace::UNSAMPLED, site(9));
        assert_eq!((t.len(), t.sparse.len()), (5002, 2));
        assert!(t.slots.len() < 5000 * SLOTS_PER_SITE + SLACK_SLOTS);
        assert_eq!(t[&100_000_000].live_bytes, 7);
        assert_eq!(t[&4999].live_bytes, 4999);
        assert_eq!(t.get(&5001), None);
        let mut ids: Vec<u32> = t.keys().collect();
        ids.sort_unstable();
        assert_eq!(ids.len(), 5002);
        assert_eq!(
            &ids[4998..],
            [4998, 4999, 100_000_000, memshim_trace::UNSAMPLED]
        );
    }

    #[test]
    fn map_sites_move_into_slots_that_grow_over_them() {
        let mut t = SiteTable::default();
        t.insert(3000, site(1));
        assert_eq!(t.sparse.len(), 1, "one site does not earn 3000 slots");
        // The last id is the map's own: its site moves into the slots, then counts one more.
        for id in 0..=3000 {
            t.get_or_default(id).allocations += 1;
        }
        assert!(t.slots.len() > 3000);
        assert_eq!(t.sparse.len(), 0);
        assert_eq!(t.len(), 3001);
        assert_eq!((t[&3000].live_bytes, t[&3000].allocations), (1, 2));
        assert_eq!(t.iter().count(), 3001);
    }

    #[test]
    fn equal_whatever_the_layout() {
        let a: SiteTable = [(2, site(1)), (40_000, site(2))].into_iter().collect();
        let mut b = SiteTable::with_ids(50_000);
        b.insert(40_000, site(2));
        b.insert(2, site(1));
        assert_eq!(a, b);
        b.get_or_default(3);
        assert_ne!(a, b);
    }
}
