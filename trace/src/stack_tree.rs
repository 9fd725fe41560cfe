//! The stacks of a trace as one tree of frames, callers shared: what a reader keeps of the trace's
//! stack records, [`StackBranch`] (since version 12) and [`StackDef`] alike.
//!
//! A PyTorch job's import alone defines a million stacks of 75 frames, nearly all of them distinct
//! in their innermost frames and alike in their callers: as lists they were 700 MB in a report and
//! 87 million frames to decode; as a tree they are 6 to 7 million nodes. A node is a frame and its
//! parent; a stack is its innermost node, and its frames are read by following parents to the root.
//!
//! Never trusts a record: a node is only ever the child of an earlier node, so there is no loop; a
//! branch that would redefine nodes is left out; nodes of records that never arrived (a lost frame)
//! are placeholders that no stack reaches, and a branch hung below one keeps its own frames; a
//! stack hands out at most [`MAX_FRAMES`] frames.
use std::collections::HashMap;

use crate::{StackBranch, StackDef};

/// The parent of the root, and of a node whose parent was never defined: its stack's frames end
/// with it.
const LOST: u32 = u32::MAX;
/// The parent of a placeholder for a node whose record never arrived.
const PLACEHOLDER: u32 = u32::MAX - 1;
/// A stack id not defined.
const UNDEFINED: u32 = u32::MAX;
/// The most frames a stack hands out, well above what the shim records (256 native frames, 128
/// Python ones and the driver's): a few bytes of branches can make a chain far deeper.
pub const MAX_FRAMES: usize = 1024;
/// The most nodes one branch may skip (a lost frame of branches), and how far the skipped nodes
/// may outnumber the real ones: a corrupt `first` never makes a reader allocate without bound.
const MAX_GAP: usize = 1 << 22;
/// Stack ids up to this far beyond the highest defined are kept in the dense table.
const DENSE_SLACK: usize = 1 << 16;

/// The tree of a trace's stacks.
#[derive(Clone, Debug)]
pub struct StackTree {
    /// By node: its parent ([`LOST`] for the root, [`PLACEHOLDER`] for a placeholder).
    parents: Vec<u32>,
    /// By node: its frame (0 for the root and placeholders).
    frames: Vec<u64>,
    /// Placeholders made so far.
    placeholders: usize,
    /// By stack id: its innermost node, or [`UNDEFINED`].
    stacks: Vec<u32>,
    /// Stack ids too far beyond the dense table (never below its length).
    sparse: HashMap<u32, u32>,
    /// Stacks defined.
    defined: usize,
    /// The last [`StackDef`]'s path: the next one shares the callers they have in common.
    last_def: LastPath,
}

/// The last stack's frames, outermost first, with their nodes: consecutive stacks of a program
/// mostly share their callers, and the frames they share are found again by comparing, not by
/// looking each one up. What [`StackTree::define`] and the writer's brancher both keep.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastPath(Vec<(u64, u32)>);

impl LastPath {
    /// Keeps the callers `frames` (innermost first) share with the last stack; returns how many
    /// there are and the node of the innermost of them (0, the root, for none).
    pub(crate) fn share(&mut self, frames: &[u64]) -> (usize, u32) {
        let n = frames.len();
        let common = self
            .0
            .iter()
            .enumerate()
            .take_while(|&(i, &(f, _))| i < n && f == frames[n - 1 - i])
            .count();
        self.0.truncate(common);
        (common, self.0.last().map_or(0, |&(_, node)| node))
    }

    /// The next frame of the path, inward, and its node.
    pub(crate) fn push(&mut self, frame: u64, node: u32) {
        self.0.push((frame, node));
    }

    /// Forgets the path.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

impl Default for StackTree {
    fn default() -> Self {
        StackTree {
            parents: vec![LOST],
            frames: vec![0],
            placeholders: 0,
            stacks: Vec::new(),
            sparse: HashMap::new(),
            defined: 0,
            last_def: LastPath::default(),
        }
    }
}

impl StackTree {
    /// Adds a stack given whole (format versions up to 11).
    pub fn define(&mut self, def: &StackDef) {
        let n = def.frames.len();
        if n == 0 {
            self.set_stack(def.id, 0);
            return;
        }
        let outer = |i: usize| def.frames[n - 1 - i];
        let (common, mut node) = self.last_def.share(&def.frames);
        for i in common..n {
            let Some(child) = self.push(node, outer(i)) else {
                self.last_def.clear();
                return;
            };
            node = child;
            self.last_def.push(outer(i), node);
        }
        self.set_stack(def.id, node);
    }

    /// Adds a stack given as a branch of the tree (format version 12 on).
    pub fn branch(&mut self, b: &StackBranch) {
        let len = self.parents.len();
        if b.frames.is_empty() {
            let parent = b.parent as usize;
            if parent < len && self.parents[parent] != PLACEHOLDER {
                self.set_stack(b.id, b.parent);
            }
            return;
        }
        let first = b.first as usize;
        let gap = first.wrapping_sub(len);
        let fits = (b.first as u64 + b.frames.len() as u64) < u64::from(PLACEHOLDER);
        if first < len || gap > MAX_GAP || self.placeholders + gap > MAX_GAP + 4 * len || !fits {
            return;
        }
        self.placeholders += gap;
        self.parents.resize(first, PLACEHOLDER);
        self.frames.resize(first, 0);
        let parent = b.parent as usize;
        let mut node = if parent < len && self.parents[parent] != PLACEHOLDER {
            b.parent
        } else {
            LOST
        };
        for &f in &b.frames {
            self.parents.push(node);
            self.frames.push(f);
            node = (self.parents.len() - 1) as u32;
        }
        self.set_stack(b.id, node);
    }

    /// A new node below `parent`, unless the tree has run out of node numbers.
    fn push(&mut self, parent: u32, frame: u64) -> Option<u32> {
        let node = u32::try_from(self.parents.len())
            .ok()
            .filter(|&n| n < PLACEHOLDER)?;
        self.parents.push(parent);
        self.frames.push(frame);
        Some(node)
    }

    fn set_stack(&mut self, id: u32, node: u32) {
        let i = id as usize;
        let was = if i < self.stacks.len() {
            std::mem::replace(&mut self.stacks[i], node)
        } else if i <= self.stacks.len().saturating_mul(2) + DENSE_SLACK {
            self.stacks.resize(i + 1, UNDEFINED);
            // What the dense table now covers leaves the sparse one, so the sparse ids all lie past it.
            if !self.sparse.is_empty() {
                let covered: Vec<u32> = self
                    .sparse
                    .keys()
                    .copied()
                    .filter(|&k| (k as usize) < self.stacks.len())
                    .collect();
                for k in covered {
                    if let Some(n) = self.sparse.remove(&k) {
                        self.stacks[k as usize] = n;
                    }
                }
            }
            std::mem::replace(&mut self.stacks[i], node)
        } else {
            self.sparse.insert(id, node).unwrap_or(UNDEFINED)
        };
        if was == UNDEFINED {
            self.defined += 1;
        }
    }

    /// The innermost node of stack `id`, when it is defined (0, the root, for an empty stack).
    pub fn node(&self, id: u32) -> Option<u32> {
        let n = match self.stacks.get(id as usize) {
            Some(&n) => n,
            None => *self.sparse.get(&id)?,
        };
        (n != UNDEFINED).then_some(n)
    }

    /// The frames of stack `id`, innermost first, when it is defined.
    pub fn frames(&self, id: u32) -> Option<Frames<'_>> {
        Some(self.frames_from(self.node(id)?))
    }

    /// The frames of stack `id` as a list, innermost first (empty when it is not defined).
    pub fn to_vec(&self, id: u32) -> Vec<u64> {
        self.frames(id).map_or_else(Vec::new, Iterator::collect)
    }

    /// The frames from `node` to the root, innermost first.
    pub fn frames_from(&self, node: u32) -> Frames<'_> {
        Frames {
            tree: self,
            node,
            left: MAX_FRAMES,
        }
    }

    /// A node's frame and its parent; `None` for the root, a placeholder, a node out of range, and
    /// the parent of a node whose parent was never defined.
    pub fn step(&self, node: u32) -> Option<(u64, u32)> {
        let parent = *self.parents.get(node as usize)?;
        if node == 0 || parent == PLACEHOLDER {
            return None;
        }
        Some((self.frames[node as usize], parent))
    }

    /// A value for every node (indexed by node), worked out from its parent's value and its own
    /// frame, in one pass: node numbers are in the order nodes were made, a parent before its
    /// children, so each parent's value is done first and mostly nearby, and no stack's callers
    /// are walked again. The root, placeholders and a node whose parent was never defined start
    /// from `root`.
    pub fn scan<T: Copy>(&self, root: T, mut f: impl FnMut(T, u64) -> T) -> Vec<T> {
        let mut out = Vec::with_capacity(self.parents.len());
        out.push(root);
        for (&parent, &frame) in self.parents.iter().zip(&self.frames).skip(1) {
            let value = match parent {
                PLACEHOLDER => root,
                p => f(out.get(p as usize).copied().unwrap_or(root), frame),
            };
            out.push(value);
        }
        out
    }

    /// How many stacks are defined.
    pub fn len(&self) -> usize {
        self.defined
    }

    /// True when no stack is defined.
    pub fn is_empty(&self) -> bool {
        self.defined == 0
    }

    /// The nodes, the root and placeholders included: node numbers are below this.
    pub fn node_count(&self) -> usize {
        self.parents.len()
    }

    /// Every defined stack id, ascending.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let mut sparse: Vec<u32> = self
            .sparse
            .iter()
            .filter(|&(_, &n)| n != UNDEFINED)
            .map(|(&k, _)| k)
            .collect();
        sparse.sort_unstable();
        self.stacks
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n != UNDEFINED)
            .map(|(i, _)| i as u32)
            .chain(sparse)
    }

    /// Every frame of every node (each place in the tree once; a return address at several places
    /// comes several times): what naming the frames of every stack needs, without reading each
    /// stack.
    pub fn node_frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.parents
            .iter()
            .zip(&self.frames)
            .skip(1)
            .filter(|&(&p, _)| p != PLACEHOLDER)
            .map(|(_, &f)| f)
    }
}

/// The frames of one stack, innermost first (see [`StackTree::frames`]).
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    tree: &'a StackTree,
    node: u32,
    left: usize,
}

impl Iterator for Frames<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        let (frame, parent) = self.tree.step(self.node)?;
        self.node = parent;
        self.left -= 1;
        Some(frame)
    }
}

#[cfg(test)]
#[path = "stack_tree_tests.rs"]
mod tests;
