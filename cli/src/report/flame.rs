//! The flame graphs of a process's host heap: the frames the reports show of every site, merged into
//! one tree per weighting (live at the peak, live at the end, allocated), with the frames too light
//! to see merged into "other" so that a page of a large trace stays small. Renderers and exports
//! draw these trees; none of them merges frames of its own.
use rustc_hash::FxHashMap as HashMap;

use super::frame_marks::{hidden, short_names, traits, FrameContext, Traits};
use super::model::frame::shown_by;
use super::model::{FlameNode, FlameSection, FlameTree, FrameOut};
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;

/// Frames under this share of a tree's bytes are merged into "other".
const CUT_SHARE: u64 = 1000;
/// At most this many nodes per tree: a tree with more is cut again at twice the weight.
const MAX_NODES: usize = 3000;

/// A stack as the flame graphs name its frames (indexes into [`Names`]), outermost first; `None`
/// for the CUDA driver's own.
type Path = Option<Vec<(u32, &'static str)>>;

/// Frame names, each once: a PyTorch job has a million stacks over a few thousand names.
#[derive(Default)]
struct Names {
    index: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: String) -> u32 {
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.clone());
        self.index.insert(name, i);
        i
    }
}

/// What a flame path needs of one frame, worked out once per return address.
struct Cached {
    name: u32,
    kind: &'static str,
    traits: Traits,
    driver: bool,
}

/// The three flame graphs of `t`'s host heap. Each stack's path is made once for all three, from
/// its return addresses' frames made once each: building every stack's frames anew took a CPU
/// PyTorch trace's report (1.16M stacks, 75 frames deep) 70 s and 3 GB.
pub fn section(t: &Replayed, sym: &mut Symbolizer) -> FlameSection {
    let sampled = t.heap.sample_bytes > 0;
    let peak_sites = t.heap.peak_sites();
    let sites = t.heap.sites();
    let weights = |id: u32| -> [(u64, u64); 3] {
        let peak = peak_sites
            .get(&id)
            .map_or((0, 0), |s| (s.live_bytes, s.live_count));
        let (leaked, allocated) = sites.get(&id).map_or(((0, 0), (0, 0)), |s| {
            let leaked = if sampled {
                // What the sampled blocks stand for, as the leak tables print it.
                (
                    s.est_live_bytes.round().max(0.0) as u64,
                    s.est_live_count.round().max(0.0) as u64,
                )
            } else {
                (s.live_bytes, s.live_count)
            };
            (leaked, (s.allocated_bytes, s.allocations))
        });
        [peak, leaked, allocated]
    };
    // Stack order, so that merging visits the sites the same way run after run.
    let mut ids: Vec<u32> = peak_sites
        .keys()
        .chain(sites.keys())
        .copied()
        .filter(|id| *id != memshim_trace::UNSAMPLED)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let cx = FrameContext::of(t);
    let mut names = Names::default();
    let mut cache: HashMap<u64, Vec<Cached>> = HashMap::default();
    let mut trees = [Builder::new(), Builder::new(), Builder::new()];
    for id in ids {
        let w = weights(id);
        if w.iter().all(|(bytes, _)| *bytes == 0) {
            continue;
        }
        let Some(addrs) = t.stacks.get(&id) else {
            // A stack never defined has no frames: the root alone carries it.
            for (tree, (bytes, blocks)) in trees.iter_mut().zip(w) {
                if bytes > 0 {
                    tree.add(&[], bytes, blocks);
                }
            }
            continue;
        };
        for &a in addrs {
            cache.entry(a).or_insert_with(|| {
                let mut frames = super::sites::address_frames(t, sym, a);
                // Hiding depends on the whole stack: it is worked out per stack, in `path`.
                short_names(&mut frames, &cx);
                frames
                    .iter()
                    .map(|f| Cached {
                        name: names.id(label(f)),
                        kind: f.kind,
                        traits: traits(f),
                        driver: super::owner::owner(std::slice::from_ref(f)) == "cuda_driver",
                    })
                    .collect()
            });
        }
        let Some(path) = path(addrs.iter().flat_map(|a| &cache[a]), cx.all_frames) else {
            continue;
        };
        for (tree, (bytes, blocks)) in trees.iter_mut().zip(w) {
            if bytes > 0 {
                tree.add(&path, bytes, blocks);
            }
        }
    }
    let [peak, leaked, allocated] = trees.map(|b| b.finish(&names.names));
    FlameSection {
        peak,
        leaked,
        allocated,
    }
}

/// A stack's path from its frames (innermost first): the frames the reports show, outermost
/// first, as `sites::frames` and `frame::shown` would give them.
fn path<'a>(frames: impl Iterator<Item = &'a Cached>, all_frames: bool) -> Path {
    let frames: Vec<&Cached> = frames.collect();
    if frames.iter().any(|f| f.driver) {
        return None;
    }
    let first_python = frames.iter().position(|f| f.traits.python);
    let shown = shown_by(&frames, |i, f| {
        !all_frames && hidden(f.traits, i, first_python).is_some()
    });
    Some(shown.iter().rev().map(|f| (f.name, f.kind)).collect())
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
    name: u32,
    kind: &'static str,
    bytes: u64,
    blocks: u64,
    kids: HashMap<u32, usize>,
}

/// Merges weighted stacks (outermost frame first) into one tree, cut when finished.
struct Builder {
    nodes: Vec<Whole>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            nodes: vec![Whole::default()],
        }
    }

    fn add(&mut self, path: &[(u32, &'static str)], bytes: u64, blocks: u64) {
        let nodes = &mut self.nodes;
        let mut at = 0;
        nodes[0].bytes += bytes;
        nodes[0].blocks += blocks;
        for &(name, kind) in path {
            let next = nodes.len();
            let child = *nodes[at].kids.entry(name).or_insert(next);
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

    /// The tree cut, its frames named from `names`.
    fn finish(self, names: &[String]) -> FlameTree {
        let nodes = &self.nodes;
        let total = nodes[0].bytes;
        let mut cut = total.div_ceil(CUT_SHARE).max(1);
        loop {
            let mut out = Vec::new();
            let mut merged = 0;
            cut_children(nodes, names, 0, None, cut, &mut out, &mut merged);
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
}

/// Appends the children of `at` to `out` depth first, heaviest first (ties by name), those under
/// `cut` merged into one "other" after them.
fn cut_children(
    nodes: &[Whole],
    names: &[String],
    at: usize,
    parent: Option<u32>,
    cut: u64,
    out: &mut Vec<FlameNode>,
    merged: &mut u64,
) {
    let mut kids: Vec<usize> = nodes[at].kids.values().copied().collect();
    kids.sort_by(|&a, &b| {
        (nodes[b].bytes.cmp(&nodes[a].bytes))
            .then_with(|| names[nodes[a].name as usize].cmp(&names[nodes[b].name as usize]))
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
                name: names[n.name as usize].clone(),
                kind: n.kind,
                bytes: n.bytes,
                blocks: n.blocks,
                parent,
            });
            cut_children(nodes, names, k, Some(index), cut, out, merged);
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

    /// Merges stacks of named frames, as `section` does with its paths.
    fn tree(stacks: impl Iterator<Item = (Vec<(String, &'static str)>, u64, u64)>) -> FlameTree {
        let mut names = Names::default();
        let mut b = Builder::new();
        for (path, bytes, blocks) in stacks {
            let path: Vec<(u32, &'static str)> =
                path.into_iter().map(|(n, k)| (names.id(n), k)).collect();
            b.add(&path, bytes, blocks);
        }
        b.finish(&names.names)
    }

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
