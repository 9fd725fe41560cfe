//! The flame graphs of a process's host heap: the frames the reports show of every site, merged into
//! one tree per weighting (live at the peak, live at the end, allocated), with the frames too light
//! to see merged into "other" so that a page of a large trace stays small. Renderers and exports
//! draw these trees; none of them merges frames of its own.
use rustc_hash::FxHashMap as HashMap;

use super::model::{FlameNode, FlameSection, FlameTree, FrameOut};
use crate::analysis::SiteStats;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;

/// Frames under this share of a tree's bytes are merged into "other".
const CUT_SHARE: u64 = 1000;
/// At most this many nodes per tree: a tree with more is cut again at twice the weight.
const MAX_NODES: usize = 3000;

/// A stack as the flame graphs name its frames, outermost first; `None` for the CUDA driver's own.
type Path = Option<Vec<(String, &'static str)>>;

/// The three flame graphs of `t`'s host heap.
pub fn section(t: &Replayed, sym: &mut Symbolizer) -> FlameSection {
    let mut paths: HashMap<u32, Path> = HashMap::default();
    let sampled = t.heap.sample_bytes > 0;
    let mut build = |sites: &HashMap<u32, SiteStats>, weight: &dyn Fn(&SiteStats) -> (u64, u64)| {
        let mut stacks: Vec<(u32, u64, u64)> = sites
            .iter()
            .filter(|(id, _)| **id != memshim_trace::UNSAMPLED)
            .map(|(id, s)| {
                let (bytes, blocks) = weight(s);
                (*id, bytes, blocks)
            })
            .filter(|(_, bytes, _)| *bytes > 0)
            .collect();
        // Stack order, so that merging visits the sites the same way run after run.
        stacks.sort_unstable_by_key(|(id, ..)| *id);
        let weighted = stacks.into_iter().filter_map(|(id, bytes, blocks)| {
            let path = paths.entry(id).or_insert_with(|| path(t, sym, id));
            path.clone().map(|p| (p, bytes, blocks))
        });
        tree(weighted)
    };
    let peak = build(&t.heap.peak_sites(), &|s| (s.live_bytes, s.live_count));
    let leaked = build(t.heap.sites(), &|s| {
        if sampled {
            // What the sampled blocks stand for, as the leak tables print it.
            (
                s.est_live_bytes.round().max(0.0) as u64,
                s.est_live_count.round().max(0.0) as u64,
            )
        } else {
            (s.live_bytes, s.live_count)
        }
    });
    let allocated = build(t.heap.sites(), &|s| (s.allocated_bytes, s.allocations));
    FlameSection {
        peak,
        leaked,
        allocated,
    }
}

fn path(t: &Replayed, sym: &mut Symbolizer, id: u32) -> Path {
    let frames = super::sites::frames(t, sym, id);
    if super::owner::owner(&frames) == "cuda_driver" {
        return None;
    }
    let shown = super::model::frame::shown(&frames);
    Some(shown.iter().rev().map(|f| (label(f), f.kind)).collect())
}

/// A frame's name in a flame graph: a Python frame with its file and line (one function is many
/// frames there), a native one by its function alone, or where it lies when it has no symbol.
pub fn label(f: &FrameOut) -> String {
    let func = f
        .function
        .clone()
        .unwrap_or_else(|| super::model::frame::place(f));
    if f.kind != "python" {
        return func;
    }
    match (super::model::frame::file_name(f), f.line) {
        (Some(file), Some(line)) => format!("{func} ({file}:{line})"),
        (Some(file), None) => format!("{func} ({file})"),
        _ => func,
    }
}

/// A node of the whole tree, before the cut.
#[derive(Default)]
struct Whole {
    name: String,
    kind: &'static str,
    bytes: u64,
    blocks: u64,
    kids: HashMap<String, usize>,
}

/// Merges weighted stacks (outermost frame first) into one tree and cuts it.
fn tree(stacks: impl Iterator<Item = (Vec<(String, &'static str)>, u64, u64)>) -> FlameTree {
    let mut nodes = vec![Whole::default()];
    for (path, bytes, blocks) in stacks {
        let mut at = 0;
        nodes[0].bytes += bytes;
        nodes[0].blocks += blocks;
        for (name, kind) in path {
            let next = nodes.len();
            let child = *nodes[at].kids.entry(name.clone()).or_insert(next);
            if child == next {
                nodes.push(Whole {
                    name,
                    kind,
                    ..Whole::default()
                });
            }
            nodes[child].bytes += bytes;
            nodes[child].blocks += blocks;
            at = child;
        }
    }
    let total = nodes[0].bytes;
    let mut cut = total.div_ceil(CUT_SHARE).max(1);
    loop {
        let mut out = Vec::new();
        let mut merged = 0;
        cut_children(&nodes, 0, None, cut, &mut out, &mut merged);
        if out.len() <= MAX_NODES || cut >= total {
            return FlameTree {
                bytes: total,
                blocks: nodes[0].blocks,
                cut_below_bytes: cut,
                merged_frames: merged,
                nodes: out,
            };
        }
        cut = cut.saturating_mul(2);
    }
}

/// Appends the children of `at` to `out` depth first, heaviest first (ties by name), those under
/// `cut` merged into one "other" after them.
fn cut_children(
    nodes: &[Whole],
    at: usize,
    parent: Option<u32>,
    cut: u64,
    out: &mut Vec<FlameNode>,
    merged: &mut u64,
) {
    let mut kids: Vec<usize> = nodes[at].kids.values().copied().collect();
    kids.sort_by(|&a, &b| {
        (nodes[b].bytes.cmp(&nodes[a].bytes)).then_with(|| nodes[a].name.cmp(&nodes[b].name))
    });
    let mut other = FlameNode {
        name: "other".into(),
        kind: "other",
        bytes: 0,
        blocks: 0,
        parent,
    };
    for k in kids {
        let n = &nodes[k];
        if n.bytes >= cut {
            let index = out.len() as u32;
            out.push(FlameNode {
                name: n.name.clone(),
                kind: n.kind,
                bytes: n.bytes,
                blocks: n.blocks,
                parent,
            });
            cut_children(nodes, k, Some(index), cut, out, merged);
        } else {
            other.bytes += n.bytes;
            other.blocks += n.blocks;
            *merged += subtree_size(nodes, k);
        }
    }
    if other.bytes > 0 {
        out.push(other);
    }
}

fn subtree_size(nodes: &[Whole], at: usize) -> u64 {
    1 + nodes[at]
        .kids
        .values()
        .map(|&i| subtree_size(nodes, i))
        .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(names: &[&str], bytes: u64, blocks: u64) -> (Vec<(String, &'static str)>, u64, u64) {
        (
            names.iter().map(|n| (n.to_string(), "native")).collect(),
            bytes,
            blocks,
        )
    }

    /// (name, bytes, blocks, parent) of every node.
    fn flat(t: &FlameTree) -> Vec<(&str, u64, u64, Option<u32>)> {
        t.nodes
            .iter()
            .map(|n| (n.name.as_str(), n.bytes, n.blocks, n.parent))
            .collect()
    }

    #[test]
    fn stacks_through_one_function_merge_into_one_frame() {
        let t = tree(
            vec![
                stack(&["main", "load", "parse"], 300, 3),
                stack(&["main", "load"], 100, 1),
                stack(&["main", "save"], 600, 2),
            ]
            .into_iter(),
        );
        assert_eq!((t.bytes, t.blocks, t.cut_below_bytes), (1000, 6, 1));
        assert_eq!(
            flat(&t),
            [
                ("main", 1000, 6, None),
                ("save", 600, 2, Some(0)),
                ("load", 400, 4, Some(0)),
                ("parse", 300, 3, Some(2)),
            ]
        );
    }

    #[test]
    fn frames_under_a_thousandth_are_merged_into_other() {
        let mut stacks = vec![stack(&["main", "big"], 1_000_000, 1)];
        for i in 0..50 {
            stacks.push(stack(&["main", &format!("tiny{i}"), "deeper"], 10, 1));
        }
        let t = tree(stacks.into_iter());
        assert_eq!(t.bytes, 1_000_500);
        assert_eq!(t.cut_below_bytes, 1001);
        // Each tiny function and the frame under it.
        assert_eq!(t.merged_frames, 100);
        assert_eq!(
            flat(&t),
            [
                ("main", 1_000_500, 51, None),
                ("big", 1_000_000, 1, Some(0)),
                ("other", 500, 50, Some(0)),
            ]
        );
        assert_eq!(t.nodes[2].kind, "other");
    }

    #[test]
    fn a_deep_stack_stays_flat_in_json() {
        let names: Vec<String> = (0..300).map(|d| format!("f{d}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let t = tree(vec![stack(&names, 8, 1)].into_iter());
        assert_eq!(t.nodes.len(), 300);
        assert_eq!(t.nodes[299].parent, Some(298));
        let json = serde_json::to_string(&t).unwrap();
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["nodes"][299]["name"], "f299");
    }

    #[test]
    fn too_many_frames_cut_at_a_heavier_weight() {
        // 800 stacks of 4 frames of their own: each over a thousandth, yet 3200 frames in all.
        let stacks: Vec<_> = (0..800)
            .map(|i| {
                let names: Vec<String> = (0..4).map(|d| format!("f{i}_{d}")).collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                stack(&names, 10, 1)
            })
            .collect();
        let t = tree(stacks.into_iter());
        assert_eq!(t.cut_below_bytes, 16);
        assert_eq!(t.merged_frames, 3200);
        assert_eq!(flat(&t), [("other", 8000, 800, None)]);
    }
}
