//! The writer's table of live allocations' serials by address (see `serials`), looked up for every
//! allocation and free a trace stores. A general hash map was a fifth of the shim's writer thread:
//! under a program's churn (a free, then an allocation at another address) its deleted-slot markers
//! piled up between rehashes and lengthened the probes, each a cache miss in a table larger than
//! the cache. Here a slot is found from the address alone (open addressing, linear probing), a
//! removal shifts the entries after it back (no markers), and [`SerialTable::home_slot`] lets the writer
//! prefetch a slot while it still has other events to encode.

/// Multiplier of Fibonacci hashing: the high bits of `(addr >> 4) * K` spread 16-byte-aligned
/// addresses evenly.
const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// The smallest table.
const MIN_SLOTS_LOG2: u32 = 10;

/// Serials by address: `(address, serial)` slots, address 0 marking an empty one.
#[derive(Debug)]
pub struct SerialTable {
    slots: Vec<(u64, u64)>,
    /// log2 of `slots.len()`.
    bits: u32,
    len: usize,
    /// The serial of address 0, which marks empty slots.
    zero: Option<u64>,
}

impl Default for SerialTable {
    fn default() -> Self {
        SerialTable {
            slots: vec![(0, 0); 1 << MIN_SLOTS_LOG2],
            bits: MIN_SLOTS_LOG2,
            len: 0,
            zero: None,
        }
    }
}

impl SerialTable {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.len + usize::from(self.zero.is_some())
    }

    fn home(&self, addr: u64) -> usize {
        ((addr >> 4).wrapping_mul(K) >> (64 - self.bits)) as usize
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// `addr`'s home slot, where its lookup starts: for a caller to prefetch a few events ahead, so
    /// that the misses of several lookups overlap instead of following one another.
    #[inline]
    pub fn home_slot(&self, addr: u64) -> &(u64, u64) {
        &self.slots[self.home(addr)]
    }

    /// The slot holding `addr`, if any.
    fn find(&self, addr: u64) -> Option<usize> {
        let mask = self.mask();
        let mut i = self.home(addr);
        loop {
            match self.slots[i].0 {
                0 => return None,
                a if a == addr => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Sets `addr`'s serial when it is in the table already or when the table holds fewer than
    /// `room` entries; returns whether it did.
    pub fn set(&mut self, addr: u64, serial: u64, room: usize) -> bool {
        if addr == 0 {
            if self.zero.is_none() && self.len() >= room {
                return false;
            }
            self.zero = Some(serial);
            return true;
        }
        let mask = self.mask();
        let mut i = self.home(addr);
        loop {
            match self.slots[i].0 {
                0 => break,
                a if a == addr => {
                    self.slots[i].1 = serial;
                    return true;
                }
                _ => i = (i + 1) & mask,
            }
        }
        if self.len() >= room {
            return false;
        }
        self.slots[i] = (addr, serial);
        self.len += 1;
        if self.len * 4 > self.slots.len() * 3 {
            self.grow();
        }
        true
    }

    /// Takes `addr` out of the table; returns its serial if it was there.
    pub fn remove(&mut self, addr: u64) -> Option<u64> {
        if addr == 0 {
            return self.zero.take();
        }
        let mut hole = self.find(addr)?;
        let serial = self.slots[hole].1;
        self.len -= 1;
        // Backward shift: each later entry of the run that may live in the hole moves into it.
        let mask = self.mask();
        let mut i = hole;
        loop {
            i = (i + 1) & mask;
            let (a, s) = self.slots[i];
            if a == 0 {
                break;
            }
            let home = self.home(a);
            // The entry at `i` may move to `hole` when its home is not in (hole, i] cyclically.
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.slots[hole] = (a, s);
                hole = i;
            }
        }
        self.slots[hole] = (0, 0);
        Some(serial)
    }

    fn grow(&mut self) {
        self.bits += 1;
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); 1 << self.bits]);
        let mask = self.mask();
        for (a, s) in old.into_iter().filter(|&(a, _)| a != 0) {
            let mut i = self.home(a);
            while self.slots[i].0 != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (a, s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A random walk of sets and removes checked against a `HashMap`, through several growths and
    /// with addresses that collide (the same 16-byte group, address 0).
    #[test]
    fn agrees_with_a_hash_map_through_churn() {
        let mut t = SerialTable::default();
        let mut m: HashMap<u64, u64> = HashMap::new();
        let mut state = 88172645463325252u64;
        for serial in 0..200_000u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let addr = ((state >> 33) % 6000) * 16 + if serial % 7 == 0 { 8 } else { 0 };
            let addr = if serial % 997 == 0 { 0 } else { addr };
            if state >> 63 == 0 {
                let room = 5000;
                let expect = m.contains_key(&addr) || m.len() < room;
                assert_eq!(t.set(addr, serial, room), expect);
                if expect {
                    m.insert(addr, serial);
                }
            } else {
                assert_eq!(t.remove(addr), m.remove(&addr));
            }
            assert_eq!(t.len(), m.len());
        }
        for (a, s) in &m {
            assert_eq!(t.remove(*a), Some(*s));
        }
        assert_eq!(t.len(), 0);
    }
}
