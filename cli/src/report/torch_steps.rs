//! Training steps found by themselves, and memory by role: reads the allocator's events a second
//! time with each stack's role and outermost Python frames known, then cuts the run into steps at
//! the line that begins the loop's body (the outermost Python line that repeats the most, at the
//! shallowest depth where one repeats at least [`MIN_STEPS`] times), and gives each step its
//! peaks, its copies and its roles; a site that grew every step is named with its bytes a step.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use memshim_trace::FrameRef;

use super::model::{Finding, StepGrowth, StepOut, TorchSection, TorchStepsOut};
use super::site_label::finding_place as place;
use super::sites::frames;
use super::torch_roles::{out as roles_out, role};
use crate::analysis::growth::growing;
use crate::analysis::python_sites::regroup;
use crate::analysis::torch_steps::{Keys, Segment, StepPass, DEPTHS};
use crate::analysis::transfers::Direction;
use crate::analysis::IdTable;
use crate::replay::torch_pass::torch_pass;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// Fewer repetitions than this are not a loop.
pub const MIN_STEPS: usize = 3;
/// Host sites below this never count as growing.
const HOST_MIN_BYTES: u64 = 64 << 10;
/// Growth rows kept.
const GROWTH_ROWS: usize = 5;

/// Adds the steps and the roles to a PyTorch section whose devices and OOMs are built.
/// `groups`: the tensor sites' Python-location groups, as the section made them.
pub fn apply(t: &Replayed, sym: &mut Symbolizer, groups: &IdTable<u32>, out: &mut TorchSection) {
    let mut keys: HashMap<u32, Keys> = HashMap::default();
    let mut roles: HashMap<u32, u8> = HashMap::default();
    for d in t.torch.devices.values() {
        for id in d.blocks.sites().keys() {
            if roles.contains_key(&id) {
                continue;
            }
            roles.insert(id, role(&frames(t, sym, id)));
            if let Some(k) = outermost(&t.stacks.to_vec(id)) {
                keys.insert(id, k);
            }
        }
    }
    let mut pass = StepPass::new(keys, roles);
    if torch_pass(&t.path, &mut pass).is_err() {
        return;
    }
    let peaks: HashMap<i32, _> = pass.peaks().map(|(d, m)| (d, *m)).collect();
    for d in &mut out.devices {
        if let Some(m) = peaks.get(&d.device) {
            d.peak_roles = Some(roles_out(&m.roles, m.allocated, m.reserved));
        }
    }
    for (o, (_, m)) in out.ooms.iter_mut().zip(pass.all_ooms()) {
        o.roles = Some(roles_out(&m.roles, m.allocated, m.reserved));
    }
    out.steps = steps(t, sym, &pass, groups, out);
}

/// A stack's outermost Python frames, outermost first, as code and line (lent or not).
fn outermost(stack: &[u64]) -> Option<Keys> {
    let mut py = stack
        .iter()
        .rev()
        .filter_map(|&f| match FrameRef::decode(f) {
            FrameRef::Python { code, line, .. } => Some((u64::from(code) << 32) | u64::from(line)),
            FrameRef::Native(_) => None,
        });
    let mut k: Keys = [0; DEPTHS];
    k[0] = py.next()?;
    for slot in k.iter_mut().skip(1) {
        *slot = py.next().unwrap_or(0);
    }
    Some(k)
}

/// Where the steps are: the depth of the marker, and each step as a range of segments.
#[derive(Debug, PartialEq, Eq)]
pub struct Cut {
    pub depth: usize,
    /// The segment that begins each step; the last step ends at `end` (exclusive).
    pub starts: Vec<usize>,
    pub end: usize,
}

/// Finds the loop: at the shallowest depth where an outermost line begins at least [`MIN_STEPS`]
/// runs of segments, the line that begins the most (the earliest of those tied: the first line of
/// the loop's body that allocates).
pub fn cut(segs: &[Segment]) -> Option<Cut> {
    for depth in 0..DEPTHS {
        let prefix = |s: &Segment| s.keys[..=depth].to_vec();
        let mut runs: HashMap<Vec<u64>, (usize, usize)> = HashMap::default();
        let mut prev: Option<Vec<u64>> = None;
        for (i, s) in segs.iter().enumerate() {
            if s.keys[depth] == 0 {
                continue;
            }
            let k = prefix(s);
            if prev.as_ref() != Some(&k) {
                let e = runs.entry(k.clone()).or_insert((0, i));
                e.0 += 1;
                prev = Some(k);
            }
        }
        let Some((key, &(n, _))) = runs
            .iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
        else {
            continue;
        };
        if n < MIN_STEPS {
            continue;
        }
        let mut starts = Vec::new();
        let mut prev: Option<Vec<u64>> = None;
        for (i, s) in segs.iter().enumerate() {
            if s.keys[depth] == 0 {
                continue;
            }
            let k = prefix(s);
            if prev.as_ref() != Some(&k) && &k == key {
                starts.push(i);
            }
            prev = Some(k);
        }
        // The last step goes on while its lines are ones the earlier steps ran.
        let last = *starts.last()?;
        let seen: HashSet<Vec<u64>> = segs[starts[0]..last]
            .iter()
            .filter(|s| s.keys[depth] != 0)
            .map(prefix)
            .collect();
        let parents = &key[..depth];
        let end = (last + 1..segs.len())
            .find(|&j| {
                let s = &segs[j];
                s.keys[..depth] != *parents || (s.keys[depth] != 0 && !seen.contains(&prefix(s)))
            })
            .unwrap_or(segs.len());
        return Some(Cut { depth, starts, end });
    }
    None
}

fn steps(
    t: &Replayed,
    sym: &mut Symbolizer,
    pass: &StepPass,
    groups: &IdTable<u32>,
    torch: &TorchSection,
) -> TorchStepsOut {
    let segs = &pass.segments;
    let mut out = TorchStepsOut {
        segments_left_out: pass.segments_left_out,
        ..TorchStepsOut::default()
    };
    let Some(c) = cut(segs) else {
        return out;
    };
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    let last_t = t
        .torch
        .devices
        .values()
        .map(|d| d.blocks.last_t)
        .max()
        .unwrap_or(t.last_t);
    // The interpreter's teardown after the loop is no part of the last step.
    let exit = t.torch.at_exit.as_ref();
    let last_t = exit.map_or(last_t, |a| a.t.min(last_t));
    let allocated_at_end = exit.map_or(pass.allocated(), |a| a.devices.values().map(|v| v.0).sum());
    let mut bounds: Vec<(usize, usize)> = c.starts.windows(2).map(|w| (w[0], w[1])).collect();
    bounds.push((*c.starts.last().unwrap_or(&0), c.end));
    let host = t.host_live().points();
    for (i, &(a, b)) in bounds.iter().enumerate() {
        let (start, end) = (segs[a].t, segs.get(b).map_or(last_t, |s| s.t));
        let part = &segs[a..b];
        let top = part
            .iter()
            .max_by(|x, y| x.peak_allocated.cmp(&y.peak_allocated).then(y.t.cmp(&x.t)));
        let Some(top) = top else { continue };
        let before = host.iter().rev().find(|p| p.0 < start).map_or(0, |p| p.1);
        let peak_host = host
            .iter()
            .filter(|p| p.0 >= start && p.0 < end)
            .map(|p| p.1)
            .max()
            .unwrap_or(before);
        let copied = |dir: Direction| -> u64 {
            t.transfers
                .timeline
                .iter()
                .filter(|c| c.0 >= start && c.0 < end && c.3 == dir)
                .map(|c| c.5)
                .sum()
        };
        out.steps.push(StepOut {
            index: i as u32 + 1,
            start_time_s: secs(start),
            duration_s: end.saturating_sub(start) as f64 / 1e9,
            peak_allocated_bytes: top.peak_allocated,
            end_allocated_bytes: segs
                .get(b)
                .map_or(allocated_at_end, |s| s.allocated_at_start),
            peak_reserved_bytes: part.iter().map(|s| s.peak_reserved).max().unwrap_or(0),
            peak_host_bytes: peak_host,
            htod_bytes: copied(Direction::HtoD),
            dtoh_bytes: copied(Direction::DtoH),
            roles_at_peak: roles_out(&top.roles_at_peak, top.peak_allocated, top.reserved_at_peak),
        });
    }
    out.found_by = Some("loop");
    out.marker = marker(t, sym, segs[c.starts[0]].keys, c.depth);
    let starts: Vec<u64> = bounds.iter().map(|&(a, _)| segs[a].t).collect();
    let step_of = |s: f64| -> Option<u32> {
        let ns = t.header.clock_start_ns + (s * 1e9) as u64;
        let i = starts.partition_point(|&st| st <= ns);
        (i > 0).then_some(i as u32)
    };
    let mut growth: Vec<StepGrowth> = Vec::new();
    let per_step = |from: (f64, u64), to: (f64, u64)| -> Option<(u32, u32, u64)> {
        let (a, b) = (step_of(from.0)?, step_of(to.0)?);
        (b > a && to.1 > from.1).then(|| (a, b, (to.1 - from.1) / u64::from(b - a)))
    };
    // Sites that rose in most steps, judged by steps; then growth over time that they do not cover.
    let min_rises = MIN_STEPS.max(starts.len() / 2);
    for r in super::step_sites::rising(t, groups, &starts, min_rises) {
        growth.push(StepGrowth {
            memory: "device",
            bytes_per_step: (r.held_bytes - r.from_bytes) / u64::from(r.until_step - r.since_step),
            since_step: r.since_step,
            until_step: r.until_step,
            bytes: r.held_bytes,
            place: String::new(),
            frames: frames(t, sym, r.stack),
        });
    }
    // What a site holds at the end, not its last high: a Python-grouped site's curve is the highest
    // of its stacks' (a lower bound), its live bytes are all of theirs.
    for g in &torch.growth {
        let key = |f: &crate::report::model::FrameOut| (f.address.clone(), f.line);
        if growth
            .iter()
            .any(|x| x.frames.iter().map(key).eq(g.frames.iter().map(key)))
        {
            continue;
        }
        if let Some((a, b, each)) =
            per_step((g.from_time_s, g.from_bytes), (g.to_time_s, g.live_bytes))
        {
            growth.push(StepGrowth {
                memory: "device",
                bytes_per_step: each,
                since_step: a,
                until_step: b,
                bytes: g.live_bytes,
                place: String::new(),
                frames: g.frames.clone(),
            });
        }
    }
    let host_sites = regroup(t.heap.sites(), &t.py_groups);
    for g in growing(host_sites.iter(), t.heap.last_t, HOST_MIN_BYTES) {
        let from = (secs(g.from.0), g.from.1);
        if let Some((a, b, each)) = per_step(from, (secs(g.to.0), g.live_end)) {
            growth.push(StepGrowth {
                memory: "host",
                bytes_per_step: each,
                since_step: a,
                until_step: b,
                bytes: g.live_end,
                place: String::new(),
                frames: frames(t, sym, g.stack),
            });
        }
    }
    growth.sort_by_key(|g| std::cmp::Reverse(g.bytes_per_step));
    growth.truncate(GROWTH_ROWS);
    out.growth = growth;
    findings(&mut out);
    out
}

/// The marker line's frames: those of a stack whose outermost frames begin the steps.
fn marker(
    t: &Replayed,
    sym: &mut Symbolizer,
    keys: Keys,
    depth: usize,
) -> Vec<crate::report::model::FrameOut> {
    // Ids come in order: the first that matches is the smallest.
    let stack = t
        .stacks
        .ids()
        .find(|&id| outermost(&t.stacks.to_vec(id)).is_some_and(|k| k[..=depth] == keys[..=depth]));
    let Some(stack) = stack else {
        return Vec::new();
    };
    let all: Vec<_> = frames(t, sym, stack)
        .into_iter()
        .filter(|f| f.kind == "python")
        .collect();
    // Outermost last: keep the marker's own frame and those around it.
    let keep = all.len().saturating_sub(depth + 1);
    all.into_iter().skip(keep).collect()
}

fn findings(out: &mut TorchStepsOut) {
    let Some(first) = out.steps.first() else {
        return;
    };
    let peak = out
        .steps
        .iter()
        .map(|s| s.peak_allocated_bytes)
        .max()
        .unwrap_or(0);
    out.findings.push(Finding {
        kind: "torch_steps",
        text: format!(
            "{} training steps found by the loop at {}: {:.1} ms a step, allocated up to {} (step 1: {})",
            out.steps.len(),
            place(&out.marker),
            out.steps.iter().map(|s| s.duration_s).sum::<f64>() * 1e3 / out.steps.len() as f64,
            human_bytes(peak),
            human_bytes(first.peak_allocated_bytes)
        ),
     ..Default::default() });
    for g in &out.growth {
        out.findings.push(Finding {
            kind: "torch_step_growth",
            text: format!(
                "+{} a step at {} since step {} ({} memory, {} by step {})",
                human_bytes(g.bytes_per_step),
                place(&g.frames),
                g.since_step,
                g.memory,
                human_bytes(g.bytes),
                g.until_step
            ),
            ..Default::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(t: u64, keys: Keys) -> Segment {
        Segment {
            t,
            keys,
            allocated_at_start: 0,
            peak_allocated: 0,
            peak_reserved: 0,
            roles_at_peak: [0; 7],
            reserved_at_peak: 0,
        }
    }

    #[test]
    fn the_loop_is_its_first_repeating_line_at_the_shallowest_depth() {
        // Set-up at lines 1 and 2, three steps of lines 5, 6 (with a forward under 6), 7; then 9.
        let mut segs = vec![seg(0, [1, 0, 0]), seg(1, [2, 0, 0])];
        for i in 0..3 {
            let t = 10 + i * 10;
            segs.extend([
                seg(t, [5, 0, 0]),
                seg(t + 1, [6, 50, 0]),
                seg(t + 2, [6, 51, 0]),
                seg(t + 3, [7, 0, 0]),
            ]);
        }
        segs.push(seg(50, [9, 0, 0]));
        let c = cut(&segs).expect("a loop");
        assert_eq!(
            c,
            Cut {
                depth: 0,
                starts: vec![2, 6, 10],
                end: 14
            }
        );
        // The same loop inside a function called from line 3: one depth down.
        let nested: Vec<Segment> = segs
            .iter()
            .map(|s| seg(s.t, [3, s.keys[0], s.keys[1]]))
            .collect();
        let c = cut(&nested).expect("a loop");
        assert_eq!((c.depth, c.starts.clone(), c.end), (1, vec![2, 6, 10], 14));
        // Two repetitions are not a loop.
        assert_eq!(cut(&segs[..10]), None);
    }
}
