//! The one tree behind a process's three flame graphs: frames merged by name under their parent,
//! each node with the weights of the stacks that end there (live at the peak, live at the end,
//! allocated), cut per weighting when finished. A node's total is summed from its subtree only
//! then, so adding a stack costs one node's weights, not one per frame of its path.
use rustc_hash::FxHashMap as HashMap;

use super::model::{FlameNode, FlameTree};

/// Frames under this share of a tree's bytes are merged into "other".
const CUT_SHARE: u64 = 1000;
/// At most this many nodes per tree: a tree with more is cut again at twice the weight.
const MAX_NODES: usize = 3000;
/// The weightings.
pub const WEIGHTINGS: usize = 3;

/// Bytes and blocks of each weighting.
pub type Weights = [(u64, u64); WEIGHTINGS];

struct Node {
    name: u32,
    kind: &'static str,
    parent: u32,
    /// What the stacks that end here weigh.
    own: Weights,
}

/// The tree being built. Node 0 is the root.
pub struct Builder {
    nodes: Vec<Node>,
    kids: HashMap<(u32, u32), u32>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            nodes: vec![Node {
                name: 0,
                kind: "",
                parent: 0,
                own: Default::default(),
            }],
            kids: HashMap::default(),
        }
    }

    /// The child of `at` named `name` (made with `kind` when new).
    pub fn child(&mut self, at: u32, name: u32, kind: &'static str) -> u32 {
        let next = self.nodes.len() as u32;
        let child = *self.kids.entry((at, name)).or_insert(next);
        if child == next {
            self.nodes.push(Node {
                name,
                kind,
                parent: at,
                own: Default::default(),
            });
        }
        child
    }

    /// The node a path (outermost first) leads to from the root.
    pub fn path(&mut self, path: &[(u32, &'static str)]) -> u32 {
        path.iter()
            .fold(0, |at, &(name, kind)| self.child(at, name, kind))
    }

    /// Adds a stack's weights at the node its path ends at.
    pub fn add(&mut self, at: u32, weights: Weights) {
        let own = &mut self.nodes[at as usize].own;
        for (o, w) in own.iter_mut().zip(weights) {
            o.0 += w.0;
            o.1 += w.1;
        }
    }

    /// The tree of weighting `which`, cut, its frames named from `names`: the nodes no stack of
    /// that weighting reaches are not in it.
    pub fn finish(&self, which: usize, names: &[String]) -> FlameTree {
        // Children come after their parents: summing backwards gives each node its subtree.
        let mut total: Vec<(u64, u64)> = self.nodes.iter().map(|n| n.own[which]).collect();
        for i in (1..self.nodes.len()).rev() {
            let (b, k) = total[i];
            let p = &mut total[self.nodes[i].parent as usize];
            p.0 += b;
            p.1 += k;
        }
        let kids = Kids::of(&self.nodes, &total);
        let tree = Weighted {
            nodes: &self.nodes,
            total: &total,
            kids: &kids,
            names,
        };
        let bytes = total[0].0;
        let mut cut = bytes.div_ceil(CUT_SHARE).max(1);
        loop {
            let mut out = Vec::new();
            let mut merged = 0;
            tree.cut_children(0, None, cut, &mut out, &mut merged);
            if out.len() <= MAX_NODES || cut >= bytes {
                return FlameTree {
                    bytes,
                    blocks: total[0].1,
                    cut_below_bytes: cut,
                    merged_frames: merged,
                    nodes: out,
                };
            }
            cut = cut.saturating_mul(2);
        }
    }
}

/// Each node's children with bytes in one weighting, in node order, all in one list: a list per
/// node was a heap block for each of a PyTorch job's two million nodes, three times over.
struct Kids {
    /// The children of node `i` are `list[start[i]..start[i + 1]]`.
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Kids {
    fn of(nodes: &[Node], total: &[(u64, u64)]) -> Kids {
        let weighed = |i: usize| i > 0 && total[i].0 > 0;
        let mut start = vec![0u32; nodes.len() + 1];
        for (i, n) in nodes.iter().enumerate() {
            if weighed(i) {
                start[n.parent as usize + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut list = vec![0u32; start[nodes.len()] as usize];
        for (i, n) in nodes.iter().enumerate() {
            if weighed(i) {
                let slot = &mut next[n.parent as usize];
                list[*slot as usize] = i as u32;
                *slot += 1;
            }
        }
        Kids { start, list }
    }

    fn of_node(&self, at: u32) -> &[u32] {
        let at = at as usize;
        &self.list[self.start[at] as usize..self.start[at + 1] as usize]
    }
}

/// The tree seen through one weighting.
struct Weighted<'a> {
    nodes: &'a [Node],
    total: &'a [(u64, u64)],
    kids: &'a Kids,
    names: &'a [String],
}

impl Weighted<'_> {
    /// Appends the children of `at` to `out` depth first, heaviest first (ties by name), those
    /// under `cut` merged into one "other" after them.
    fn cut_children(
        &self,
        at: u32,
        parent: Option<u32>,
        cut: u64,
        out: &mut Vec<FlameNode>,
        merged: &mut u64,
    ) {
        let name = |i: u32| &self.names[self.nodes[i as usize].name as usize];
        let mut kids = self.kids.of_node(at).to_vec();
        kids.sort_by(|&a, &b| {
            (self.total[b as usize].0.cmp(&self.total[a as usize].0))
                .then_with(|| name(a).cmp(name(b)))
        });
        let mut other = FlameNode {
            name: "other".into(),
            kind: "other",
            bytes: 0,
            blocks: 0,
            parent,
        };
        for k in kids {
            let (bytes, blocks) = self.total[k as usize];
            if bytes >= cut {
                let index = out.len() as u32;
                out.push(FlameNode {
                    name: name(k).clone(),
                    kind: self.nodes[k as usize].kind,
                    bytes,
                    blocks,
                    parent,
                });
                self.cut_children(k, Some(index), cut, out, merged);
            } else {
                other.bytes += bytes;
                other.blocks += blocks;
                *merged += self.subtree_size(k);
            }
        }
        if other.bytes > 0 {
            out.push(other);
        }
    }

    fn subtree_size(&self, at: u32) -> u64 {
        1 + self
            .kids
            .of_node(at)
            .iter()
            .map(|&k| self.subtree_size(k))
            .sum::<u64>()
    }
}

#[cfg(test)]
#[path = "flame_tree_tests.rs"]
mod tests;
