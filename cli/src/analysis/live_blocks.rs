//! The heap's live blocks by address, at 8 bytes of value a block: what bounds a replay's memory is
//! this set (millions of blocks in a large program), so the common block (under 4 GiB, weight 1:
//! every block of an unsampled trace) is kept packed and only the others in full. Both are
//! [`AddrMap`]s; an address is in at most one of them.
//!
//! Never: hold anything a block's free does not need again (its size, stack and weight).
use super::addr_map::AddrMap;

/// A live block.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Block {
    pub size: u64,
    pub stack: u32,
    /// How many blocks like it this one stands for (1 without sampling).
    pub weight: f64,
}

/// A block of under 4 GiB and weight 1.
#[derive(Clone, Copy, Debug, Default)]
struct Packed {
    size: u32,
    stack: u32,
}

impl Packed {
    fn of(b: &Block) -> Option<Packed> {
        let one = b.weight.to_bits() == 1.0f64.to_bits();
        let size = u32::try_from(b.size).ok().filter(|_| one)?;
        Some(Packed {
            size,
            stack: b.stack,
        })
    }

    fn block(self) -> Block {
        Block {
            size: u64::from(self.size),
            stack: self.stack,
            weight: 1.0,
        }
    }
}

/// Blocks by address.
#[derive(Debug, Default)]
pub struct LiveBlocks {
    packed: AddrMap<Packed>,
    /// Blocks of 4 GiB or more, and sampled ones.
    full: AddrMap<Block>,
}

impl LiveBlocks {
    /// Blocks held.
    pub fn len(&self) -> usize {
        self.packed.len() + self.full.len()
    }

    /// True when none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets the block at `addr`; returns the one it replaces.
    pub fn insert(&mut self, addr: u64, block: Block) -> Option<Block> {
        match Packed::of(&block) {
            Some(p) => {
                let old = self.packed.insert(addr, p).map(Packed::block);
                old.or_else(|| self.take_full(addr))
            }
            None => {
                let old = self.full.insert(addr, block);
                old.or_else(|| self.packed.remove(addr).map(Packed::block))
            }
        }
    }

    fn take_full(&mut self, addr: u64) -> Option<Block> {
        if self.full.is_empty() {
            return None;
        }
        self.full.remove(addr)
    }

    /// Takes the block at `addr` out.
    pub fn remove(&mut self, addr: u64) -> Option<Block> {
        match self.packed.remove(addr) {
            Some(p) => Some(p.block()),
            None => self.take_full(addr),
        }
    }

    /// The block at `addr`.
    pub fn get(&self, addr: u64) -> Option<Block> {
        match self.packed.get(addr) {
            Some(p) => Some(p.block()),
            None if self.full.is_empty() => None,
            None => self.full.get(addr).copied(),
        }
    }

    /// True when a block starts at `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.get(addr).is_some()
    }

    /// Starts fetching the entry of `addr` (see [`AddrMap::prefetch`]).
    pub fn prefetch(&self, addr: u64) {
        self.packed.prefetch(addr);
    }

    /// Every block as (address, block), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Block)> + '_ {
        let packed = self.packed.iter().map(|(a, p)| (a, p.block()));
        packed.chain(self.full.iter().map(|(a, b)| (a, *b)))
    }

    /// Bytes of the tables: what holding these blocks costs.
    pub fn table_bytes(&self) -> usize {
        self.packed.slots() * std::mem::size_of::<(u64, Packed)>()
            + self.full.slots() * std::mem::size_of::<(u64, Block)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(size: u64, stack: u32, weight: f64) -> Block {
        Block {
            size,
            stack,
            weight,
        }
    }

    #[test]
    fn a_block_moves_between_packed_and_full_and_is_never_in_both() {
        let mut l = LiveBlocks::default();
        let small = block(64, 3, 1.0);
        let huge = block(5 << 30, 4, 1.0);
        let sampled = block(64, 5, 2.5);
        assert_eq!(l.insert(0x10, small), None);
        assert_eq!(l.insert(0x20, huge), None);
        assert_eq!(l.insert(0x30, sampled), None);
        assert_eq!(l.len(), 3);
        assert_eq!(l.get(0x20), Some(huge));
        assert_eq!(l.get(0x30), Some(sampled));
        // Replacing across the two tables hands back the old block and leaves one entry.
        assert_eq!(l.insert(0x10, huge), Some(small));
        assert_eq!(l.insert(0x10, small), Some(huge));
        assert_eq!(l.insert(0x30, small), Some(sampled));
        assert_eq!(l.len(), 3);
        let mut all: Vec<(u64, Block)> = l.iter().collect();
        all.sort_by_key(|e| e.0);
        assert_eq!(all, [(0x10, small), (0x20, huge), (0x30, small)]);
        assert_eq!(l.remove(0x20), Some(huge));
        assert_eq!(l.remove(0x20), None);
        assert!(!l.contains(0x20));
        assert_eq!(l.remove(0x10), Some(small));
        assert_eq!(l.remove(0x30), Some(small));
        assert!(l.is_empty());
    }

    #[test]
    fn a_million_small_blocks_cost_under_26_bytes_each() {
        let mut l = LiveBlocks::default();
        for i in 0..1_000_000u64 {
            l.insert(0x5555_0000_0000 + i * 48, block(40, (i % 7) as u32, 1.0));
        }
        assert_eq!(l.len(), 1_000_000);
        assert!(l.table_bytes() < 26_000_000, "{} bytes", l.table_bytes());
    }
}
