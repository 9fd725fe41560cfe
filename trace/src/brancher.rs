//! The writer's side of the stack tree: each new stack becomes a [`StackBranch`] that adds only the
//! frames no earlier stack had at their place (see [`crate::StackTree`]).
//!
//! A node is found again through a small cache, not a whole tree: (parent node, frame) to child, four
//! ways a set, replaced at random when a set is full, grown from 64 KiB to at most [`MAX_SETS`] sets
//! (8 MiB). A path evicted from it is only made again under new numbers, which costs trace bytes,
//! never correctness: a reader never needs two stacks to share a node. The last stack's path is
//! kept too, so the callers a stack shares with the one before cost one comparison a frame, not a
//! lookup. On a PyTorch job's import (1.16M stacks, 87M frames) this writes 7.5M nodes; the whole
//! tree would have 5.9M.
//!
//! Never: allocate per frame, or hold more than the cache and the last stack.
use crate::stack_tree::LastPath;
use crate::StackBranch;

/// Ways of a set.
const WAYS: usize = 4;
/// Sets at the start (64 KiB).
const FIRST_SETS: usize = 1 << 10;
/// The most sets (8 MiB).
pub const MAX_SETS: usize = 1 << 17;
/// Node numbers stay below this (a reader's own markers lie above).
const LAST_NODE: u32 = u32::MAX - 2;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    parent: u32,
    /// 0 for an empty slot (no node is numbered 0: that is the root).
    node: u32,
    frame: u64,
}

/// Turns stacks into branches of the trace's stack tree.
#[derive(Debug)]
pub struct StackBrancher {
    /// The next node's number.
    next: u32,
    /// The last stack's path.
    last: LastPath,
    sets: Vec<[Slot; WAYS]>,
    max_sets: usize,
    /// Nodes put into the cache since it last grew.
    filled: usize,
}

impl Default for StackBrancher {
    fn default() -> Self {
        StackBrancher::with_max_sets(MAX_SETS)
    }
}

impl StackBrancher {
    /// A brancher whose cache grows to at most `max_sets` sets (a power of two).
    pub fn with_max_sets(max_sets: usize) -> StackBrancher {
        let max_sets = max_sets.max(1).next_power_of_two();
        StackBrancher {
            next: 1,
            last: LastPath::default(),
            sets: vec![[Slot::default(); WAYS]; FIRST_SETS.min(max_sets)],
            max_sets,
            filled: 0,
        }
    }

    /// The branch that defines stack `id` of `frames` (innermost first), or `None` once the node
    /// numbers are used up (the caller then defines the stack whole).
    pub fn branch(&mut self, id: u32, frames: &[u64]) -> Option<StackBranch> {
        let n = frames.len();
        let outer = |i: usize| frames[n - 1 - i];
        let (common, mut node) = self.last.share(frames);
        let mut i = common;
        while i < n {
            let Some(child) = self.lookup(node, outer(i)) else {
                break;
            };
            node = child;
            self.last.push(outer(i), child);
            i += 1;
        }
        let new = (n - i) as u64;
        if u64::from(self.next) + new >= u64::from(LAST_NODE) {
            self.last.clear();
            return None;
        }
        let parent = node;
        let first = self.next;
        let mut branch = Vec::with_capacity(n - i);
        for j in i..n {
            let f = outer(j);
            let child = self.next;
            self.next += 1;
            self.insert(node, f, child);
            self.last.push(f, child);
            branch.push(f);
            node = child;
        }
        Some(StackBranch {
            id,
            parent,
            first,
            frames: branch,
        })
    }

    fn set_of(&self, parent: u32, frame: u64) -> (usize, u64) {
        let h = (frame ^ u64::from(parent).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (((h >> 32) as usize) & (self.sets.len() - 1), h)
    }

    fn lookup(&self, parent: u32, frame: u64) -> Option<u32> {
        let (s, _) = self.set_of(parent, frame);
        self.sets[s]
            .iter()
            .find(|slot| slot.node != 0 && slot.parent == parent && slot.frame == frame)
            .map(|slot| slot.node)
    }

    fn insert(&mut self, parent: u32, frame: u64, node: u32) {
        if self.filled >= self.sets.len() * WAYS / 2 && self.sets.len() < self.max_sets {
            self.grow();
        }
        self.filled += 1;
        self.place(Slot {
            parent,
            node,
            frame,
        });
    }

    fn place(&mut self, slot: Slot) {
        let (s, h) = self.set_of(slot.parent, slot.frame);
        let set = &mut self.sets[s];
        let way = set
            .iter()
            .position(|w| w.node == 0)
            .unwrap_or((h >> 8) as usize % WAYS);
        set[way] = slot;
    }

    /// Doubles the cache, keeping what it held.
    fn grow(&mut self) {
        let doubled = vec![[Slot::default(); WAYS]; self.sets.len() * 2];
        let old = std::mem::replace(&mut self.sets, doubled);
        self.filled = 0;
        for slot in old.iter().flatten().filter(|s| s.node != 0) {
            self.filled += 1;
            self.place(*slot);
        }
    }
}

#[cfg(test)]
#[path = "brancher_tests.rs"]
mod tests;
