//! The flame graphs of a process's host heap: the frames the reports show of every site, merged into
//! one tree per weighting (live at the peak, live at the end, allocated), with the frames too light
//! to see merged into "other" so that a page of a large trace stays small. Renderers and exports
//! draw these trees; none of them merges frames of its own.
use rustc_hash::FxHashMap as HashMap;

use super::flame_tree::{Builder, Weights};
use super::frame_marks::{hidden, short_names, traits, FrameContext, Traits};
use super::model::frame::shown_by;
use super::model::{FlameSection, FrameOut};
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;

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

/// The three flame graphs of `t`'s host heap. Each stack is placed once for all three, from its
/// return addresses' frames made once each, at the node its stack-tree node leads to (see
/// [`Along`]): the callers a million stacks share are worked out once, not once per stack (a CPU
/// PyTorch trace's report, 1.16M stacks 75 frames deep, once took 70 s and 3 GB).
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
        .filter(|id| *id != memshim_trace::UNSAMPLED)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut frames = FrameCache {
        cx: FrameContext::of(t),
        names: Names::default(),
        by_address: HashMap::default(),
        cached: Vec::new(),
    };
    let mut b = Builder::new();
    let along = along(t, sym, &mut frames, &mut b);
    for id in ids {
        // A weighting a stack has no bytes in does not see it, blocks and all.
        let w: Weights =
            weights(id).map(|(bytes, blocks)| if bytes == 0 { (0, 0) } else { (bytes, blocks) });
        if w.iter().all(|(bytes, _)| *bytes == 0) {
            continue;
        }
        // A stack never defined has no frames: the root alone carries it.
        let at = match t.stacks.node(id) {
            None => Some(0),
            Some(leaf) => place(t, sym, &along, leaf, &mut frames, &mut b),
        };
        if let Some(at) = at {
            b.add(at, w);
        }
    }
    let names = &frames.names.names;
    FlameSection {
        peak: b.finish(0, names),
        leaked: b.finish(1, names),
        allocated: b.finish(2, names),
    }
}

/// Each return address's frames as the flame graphs need them, made once, all in one list: the
/// scan of a PyTorch job's stack tree asks for them 5.9 million times.
struct FrameCache {
    cx: FrameContext,
    names: Names,
    /// Where each address's frames are in `cached`: (start, count).
    by_address: HashMap<u64, (u32, u32)>,
    cached: Vec<Cached>,
}

impl FrameCache {
    fn of(&mut self, t: &Replayed, sym: &mut Symbolizer, addr: u64) -> &[Cached] {
        let FrameCache {
            cx,
            names,
            by_address,
            cached,
        } = self;
        let (start, count) = *by_address.entry(addr).or_insert_with(|| {
            let mut frames = super::sites::address_frames(t, sym, addr);
            // Hiding depends on where the stack's innermost Python frame is: see `along`.
            short_names(&mut frames, cx);
            let start = cached.len() as u32;
            cached.extend(frames.iter().map(|f| Cached {
                name: names.id(label(f)),
                kind: f.kind,
                traits: traits(f),
                driver: super::owner::owner(std::slice::from_ref(f)) == "cuda_driver",
            }));
            (start, frames.len() as u32)
        });
        &cached[start as usize..(start + count) as usize]
    }

    /// The frames of `addr` made by [`FrameCache::of`] (none if it was not asked).
    fn made(&self, addr: u64) -> &[Cached] {
        self.by_address.get(&addr).map_or(&[], |&(start, count)| {
            &self.cached[start as usize..(start + count) as usize]
        })
    }
}

const DRIVER: u8 = 1;
const PYTHON: u8 = 2;

/// What the flame graphs know of a node of the stack tree, worked out from its parent's (see
/// [`along`]). Which frames a stack shows depends on where its innermost Python frame is (see
/// `frame_marks::hidden`): outside it only Python frames show, inside it the native frames but
/// start-up's and the interpreter's; without one, every frame but start-up's. Each of those is a
/// path from the root that a node extends from its parent's.
#[derive(Clone, Copy, Default)]
struct Along {
    /// The tree node of the shown Python frames from the root to here.
    python: u32,
    /// The tree node a stack whose innermost frame is here ends at.
    at: u32,
    /// [`DRIVER`]: a CUDA driver frame here or above; [`PYTHON`]: a Python frame here or above.
    flags: u8,
}

/// [`Along`] for every node of `t`'s stack tree, so that placing a stack costs one lookup.
fn along(
    t: &Replayed,
    sym: &mut Symbolizer,
    frames: &mut FrameCache,
    b: &mut Builder,
) -> Vec<Along> {
    let all_frames = frames.cx.all_frames;
    let inside = |c: &Cached| !c.traits.startup && !c.traits.interpreter;
    t.stacks.scan(Along::default(), |above, frame| {
        let Along {
            mut python,
            at,
            mut flags,
        } = above;
        // Innermost first.
        let own = frames.of(t, sym, frame);
        for c in own.iter().rev() {
            if c.driver {
                flags |= DRIVER;
            }
            if c.traits.python {
                flags |= PYTHON;
                if !c.traits.import {
                    python = b.child(python, c.name, c.kind);
                }
            }
        }
        let at = if all_frames {
            extend(b, at, own, |_| true)
        } else if let Some(e) = own.iter().position(|c| c.traits.python) {
            extend(b, python, &own[..e], inside)
        } else if above.flags & PYTHON != 0 {
            extend(b, at, own, inside)
        } else {
            extend(b, at, own, |c| !c.traits.startup)
        };
        Along { python, at, flags }
    })
}

/// The flame tree's node below `at` for the frames of `own` (innermost first) that are `shown`.
fn extend(b: &mut Builder, at: u32, own: &[Cached], shown: impl Fn(&Cached) -> bool) -> u32 {
    own.iter()
        .rev()
        .filter(|c| shown(c))
        .fold(at, |at, c| b.child(at, c.name, c.kind))
}

/// The tree node the stack whose innermost node is `leaf` ends at; `None` for the CUDA driver's
/// own stacks.
fn place(
    t: &Replayed,
    sym: &mut Symbolizer,
    along: &[Along],
    leaf: u32,
    frames: &mut FrameCache,
    b: &mut Builder,
) -> Option<u32> {
    let here = along[leaf as usize];
    if here.flags & DRIVER != 0 {
        return None;
    }
    if here.at != 0 {
        return Some(here.at);
    }
    // Nothing shown: every frame is hidden (or the stack has none), as `path` says.
    let leaf_frames: Vec<u64> = t.stacks.frames_from(leaf).collect();
    for &a in &leaf_frames {
        frames.of(t, sym, a);
    }
    let all = leaf_frames.iter().flat_map(|&a| frames.made(a));
    path(all, frames.cx.all_frames).map(|p| b.path(&p))
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
        .as_deref()
        .map_or_else(|| super::model::frame::place(f), str::to_string);
    if f.kind != "python" {
        return func;
    }
    match (super::model::frame::file_name(f), f.line) {
        (Some(file), Some(line)) => format!("{func} ({file}:{line})"),
        (Some(file), None) => format!("{func} ({file})"),
        _ => func,
    }
}
