//! The heap's blocks by address, at 8 bytes of value a block: the live ones, and (for the host
//! heap) the freed ones that no allocation has reused since, which the holes analysis follows.
//! What bounds a replay's memory is the live set (millions of blocks in a large program), so the
//! common block (under 2 GiB, weight 1: every block of an unsampled trace) is kept packed and only
//! the others in full. Both are [`AddrMap`]s; an address is in at most one of them.
//!
//! A freed block is a mark in the packed table, in the slot its live block had: the free turns the
//! entry into a mark where it stands and the next allocation at that address overwrites it, so an
//! allocation or a free costs one lookup of the large table, not one in a live map and another in a
//! freed one (what the replay's time went to: each is a cache miss).
//!
//! Never: hold anything a block's free does not need again (its size, stack and weight), or more
//! than [`holes::MAX_FREED`] marks.
use super::addr_map::AddrMap;
use super::holes;

/// A live block.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Block {
    pub size: u64,
    pub stack: u32,
    /// How many blocks like it this one stands for (1 without sampling).
    pub weight: f64,
}

/// The size bit that makes a packed entry a freed block's mark.
const FREED: u32 = 1 << 31;

/// A block of under 2 GiB and weight 1, or (with [`FREED`] in its size) a freed block's mark.
#[derive(Clone, Copy, Debug, Default)]
struct Packed {
    size: u32,
    stack: u32,
}

impl Packed {
    fn of(b: &Block) -> Option<Packed> {
        let one = b.weight.to_bits() == 1.0f64.to_bits();
        let size = u32::try_from(b.size)
            .ok()
            .filter(|&s| one && s & FREED == 0)?;
        Some(Packed {
            size,
            stack: b.stack,
        })
    }

    /// The mark of a freed block of `size` bytes, which [`holes::follows`].
    fn freed(size: u64) -> Packed {
        Packed {
            size: size as u32 | FREED,
            stack: 0,
        }
    }

    fn is_freed(self) -> bool {
        self.size & FREED != 0
    }

    /// The live block, if this is one.
    fn live(self) -> Option<Block> {
        (!self.is_freed()).then_some(Block {
            size: u64::from(self.size),
            stack: self.stack,
            weight: 1.0,
        })
    }
}

/// Blocks by address.
#[derive(Debug, Default)]
pub struct LiveBlocks {
    packed: AddrMap<Packed>,
    /// Blocks of 2 GiB or more, and sampled ones.
    full: AddrMap<Block>,
    /// Marks in `packed`.
    freed: usize,
    /// Whether freed blocks are followed (marked) at all.
    follow_freed: bool,
    /// Frees not followed because [`holes::MAX_FREED`] were already.
    pub untracked: u64,
}

impl LiveBlocks {
    /// Follows freed blocks from now on (see [`LiveBlocks::freed`]).
    pub fn follow_freed(&mut self) {
        self.follow_freed = true;
    }

    /// Live blocks held.
    pub fn len(&self) -> usize {
        self.packed.len() - self.freed + self.full.len()
    }

    /// True when no live block is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the entry of `addr` out of the packed table, handing back its live block (a mark
    /// only leaves).
    fn take_packed(&mut self, addr: u64) -> Option<Block> {
        let p = self.packed.remove(addr)?;
        if p.is_freed() {
            self.freed -= 1;
        }
        p.live()
    }

    /// Sets the live block at `addr` (no longer a freed one); returns the live one it replaces.
    pub fn insert(&mut self, addr: u64, block: Block) -> Option<Block> {
        match Packed::of(&block) {
            Some(p) => match self.packed.insert(addr, p) {
                Some(old) if old.is_freed() => {
                    self.freed -= 1;
                    None
                }
                Some(old) => old.live(),
                None => self.take_full(addr),
            },
            None => {
                let old = self.full.insert(addr, block);
                let packed = self.take_packed(addr);
                old.or(packed)
            }
        }
    }

    /// Forgets that the block at `addr` was freed (its realloc failed: it is live again, or
    /// will be).
    pub fn unfree(&mut self, addr: u64) {
        if self.freed > 0 && self.packed.get(addr).is_some_and(|p| p.is_freed()) {
            self.take_packed(addr);
        }
    }

    fn take_full(&mut self, addr: u64) -> Option<Block> {
        if self.full.is_empty() {
            return None;
        }
        self.full.remove(addr)
    }

    /// Frees the live block at `addr`, handing it back; it stays as a freed mark when followed.
    pub fn free(&mut self, addr: u64) -> Option<Block> {
        let room = self.follow_freed && self.freed < holes::MAX_FREED;
        if let Some(p) = self.packed.get_mut(addr) {
            let block = p.live()?;
            if room && holes::follows(block.size) {
                *p = Packed::freed(block.size);
                self.freed += 1;
            } else {
                self.packed.remove(addr);
                self.note_untracked(block.size);
            }
            return Some(block);
        }
        let block = self.take_full(addr)?;
        if room && holes::follows(block.size) {
            self.packed.insert(addr, Packed::freed(block.size));
            self.freed += 1;
        } else {
            self.note_untracked(block.size);
        }
        Some(block)
    }

    fn note_untracked(&mut self, size: u64) {
        if self.follow_freed && holes::follows(size) {
            self.untracked += 1;
        }
    }

    /// The live block at `addr`.
    pub fn get(&self, addr: u64) -> Option<Block> {
        match self.packed.get(addr) {
            Some(p) => p.live(),
            None if self.full.is_empty() => None,
            None => self.full.get(addr).copied(),
        }
    }

    /// True when a live block starts at `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.get(addr).is_some()
    }

    /// Starts fetching the entry of `addr` (see [`AddrMap::prefetch`]).
    pub fn prefetch(&self, addr: u64) {
        self.packed.prefetch(addr);
    }

    /// Every live block as (address, block), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Block)> + '_ {
        let packed = self.packed.iter().filter_map(|(a, p)| Some((a, p.live()?)));
        packed.chain(self.full.iter().map(|(a, b)| (a, *b)))
    }

    /// Every followed freed block as (address, size), in no particular order.
    pub fn freed(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let marks = self.packed.iter().filter(|(_, p)| p.is_freed());
        marks.map(|(a, p)| (a, u64::from(p.size & !FREED)))
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
        assert_eq!(l.free(0x20), Some(huge));
        assert_eq!(l.free(0x20), None);
        assert!(!l.contains(0x20));
        assert_eq!(l.free(0x10), Some(small));
        assert_eq!(l.free(0x30), Some(small));
        assert!(l.is_empty());
    }

    #[test]
    fn a_free_leaves_a_mark_that_the_next_allocation_there_takes() {
        let mut l = LiveBlocks::default();
        l.follow_freed();
        let small = block(64, 3, 1.0);
        let sampled = block(100, 5, 2.5);
        let mapped = block(1 << 20, 6, 1.0);
        l.insert(0x10, small);
        l.insert(0x20, sampled);
        l.insert(0x30, mapped);
        assert_eq!(l.free(0x10), Some(small));
        assert_eq!(l.free(0x20), Some(sampled));
        assert_eq!(
            l.free(0x30),
            Some(mapped),
            "too large to be a hole: no mark"
        );
        assert_eq!(l.free(0x10), None, "a mark is no live block");
        assert_eq!((l.len(), l.get(0x10), l.contains(0x20)), (0, None, false));
        let mut freed: Vec<(u64, u64)> = l.freed().collect();
        freed.sort_unstable();
        assert_eq!(freed, [(0x10, 64), (0x20, 100)]);
        assert_eq!(l.iter().count(), 0);
        // Reuse by a packed block, by a sampled one, and a failed realloc's return.
        assert_eq!(l.insert(0x10, small), None);
        assert_eq!(l.insert(0x20, sampled), None);
        assert_eq!(l.free(0x10), Some(small));
        l.unfree(0x10);
        l.unfree(0x20);
        assert_eq!(l.freed().count(), 0);
        assert_eq!(l.len(), 1);
        assert_eq!(l.get(0x20), Some(sampled));
        assert_eq!(l.untracked, 0);
    }

    #[test]
    fn marks_stop_at_the_most_followed_and_only_when_asked() {
        let mut l = LiveBlocks::default();
        let n = holes::MAX_FREED as u64 + 10;
        for i in 1..=n {
            l.insert(i * 16, block(16, 1, 1.0));
        }
        for i in 1..=5 {
            l.free(i * 16);
        }
        assert_eq!((l.freed().count(), l.untracked), (0, 0), "not followed");
        l.follow_freed();
        for i in 6..=n {
            assert!(l.free(i * 16).is_some());
        }
        assert_eq!(l.freed().count(), holes::MAX_FREED);
        assert_eq!(l.untracked, 5);
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
