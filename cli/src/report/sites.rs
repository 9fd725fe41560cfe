//! The sites every section shows: a stack's frames symbolized, who owns them, and the live sites of a
//! class of memory with their totals. Shared by the report's builder and its sections, so that no
//! section has to call back into the builder.
use std::cell::RefCell;

use rustc_hash::FxHashMap as HashMap;

use super::frame_marks::{FrameContext, Traits};
use super::model::{Estimate, FrameOut, LeakClass, Site};
use crate::analysis::{live_sites, IdTable, SiteStats, SiteTable};
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;

/// The live sites of one class of memory (host heap, mappings, a device kind), symbolized; in a
/// Python process each Python location shows the native frames of its largest stack of this class.
pub fn leak_class(t: &Replayed, sym: &mut Symbolizer, sites: &SiteTable) -> LeakClass {
    leak_class_of(t, sym, &by_location(t, sites))
}

/// `sites` grouped by Python location, each location under its stack that allocated the most (see
/// [`weighted_groups`]): what the leak and growth sections of one kind of memory both read, worked
/// out once (a PyTorch job has a million stacks to fold).
pub fn by_location<'a>(t: &Replayed, sites: &'a SiteTable) -> std::borrow::Cow<'a, SiteTable> {
    crate::analysis::python_sites::regroup(sites, &weighted_groups(t, sites))
}

/// The Python-location groups of `sites`, each represented by the stack that allocated the most
/// among them (not by whichever stack of any kind of memory reached the line first): the native
/// frames shown under a device site are a device allocation's. Empty without Python frames.
pub fn weighted_groups(t: &Replayed, sites: &SiteTable) -> IdTable<u32> {
    if t.py_groups.is_empty() {
        return Default::default();
    }
    crate::analysis::python_sites::groups_by_weight(&t.py_keys, sites)
}

/// As [`leak_class`], with the stacks of each Python location grouped as `groups` says.
pub fn leak_class_grouped(
    t: &Replayed,
    sym: &mut Symbolizer,
    sites: &SiteTable,
    groups: &IdTable<u32>,
) -> LeakClass {
    leak_class_of(
        t,
        sym,
        &crate::analysis::python_sites::regroup(sites, groups),
    )
}

/// As [`leak_class`], of sites already grouped.
pub fn leak_class_of(t: &Replayed, sym: &mut Symbolizer, sites: &SiteTable) -> LeakClass {
    let list = ranked_sites(t, sym, sites, usize::MAX);
    let unsampled = sites.get(&memshim_trace::UNSAMPLED);
    let unsampled_bytes = unsampled.map_or(0, |s| s.live_bytes);
    let unsampled_count = unsampled.map_or(0, |s| s.live_count);
    let driver = || list.iter().filter(|s| s.owner == "cuda_driver");
    let by_design = || {
        list.iter()
            .filter(|s| super::by_design::is_by_design(s.owner))
    };
    let mut c = LeakClass {
        bytes: list.iter().map(|s| s.bytes).sum::<u64>() + unsampled_bytes,
        count: list.iter().map(|s| s.count).sum::<u64>() + unsampled_count,
        driver_bytes: driver().map(|s| s.bytes).sum(),
        driver_count: driver().map(|s| s.count).sum(),
        by_design_bytes: by_design().map(|s| s.bytes).sum(),
        by_design_count: by_design().map(|s| s.count).sum(),
        unsampled_bytes,
        unsampled_count,
        sites: list,
        ..Default::default()
    };
    super::figures::leak_class(&mut c);
    c
}

/// The `top` largest live sites of `sites`, largest first by what the reports print (with sampling,
/// the estimate: scaling favours small blocks, so the sampled bytes' order is not the estimates'),
/// symbolized. Only those kept are symbolized: a trace of a million stacks (a library's static
/// initialisers) has as many sites, and the peak's list shows a hundred.
pub fn ranked_sites(
    t: &Replayed,
    sym: &mut Symbolizer,
    sites: &SiteTable,
    top: usize,
) -> Vec<Site> {
    let sampled = t.heap.sample_bytes > 0;
    let estimate = |s: &SiteStats| Estimate {
        bytes: s.est_live_bytes.round().max(0.0) as u64,
        count: s.est_live_count.round().max(0.0) as u64,
    };
    let mut ranked = live_sites(sites);
    if sampled {
        // Stable: equal estimates keep live_sites' order.
        ranked.sort_by_key(|(_, s)| std::cmp::Reverse(estimate(s).bytes));
    }
    ranked.truncate(top);
    ranked
        .into_iter()
        .map(|(id, s)| {
            let (frames, owner) = owned_frames(t, sym, id);
            Site {
                owner,
                suppressed_by: None,
                bytes: s.live_bytes,
                count: s.live_count,
                allocations: s.allocations,
                allocated_bytes: s.allocated_bytes,
                estimated: sampled.then(|| estimate(&s)),
                label: None,
                frames,
            }
        })
        .collect()
}

/// The frames of stack `stack`, innermost first, marked.
pub fn frames(t: &Replayed, sym: &mut Symbolizer, stack: u32) -> Vec<FrameOut> {
    stack_frames(t, sym, stack, false).0
}

/// As [`frames`], with the stack's owner (see `owner::owner`).
pub fn owned_frames(
    t: &Replayed,
    sym: &mut Symbolizer,
    stack: u32,
) -> (Vec<FrameOut>, &'static str) {
    let (frames, owner) = stack_frames(t, sym, stack, true);
    let owner = owner.unwrap_or_else(|| super::owner::owner(&frames));
    (frames, owner)
}

/// A stack's frames and, with `owned` while a report is built, its owner. While a report is built,
/// each return address's frames and what marking and the owner read of them come from the memo (see
/// [`with_frame_memo`]), and the list is sized once: a PyTorch job's report holds the frames of ten
/// thousand sites of 150 frames each, and a list grown by doubling was half empty.
fn stack_frames(
    t: &Replayed,
    sym: &mut Symbolizer,
    stack: u32,
    owned: bool,
) -> (Vec<FrameOut>, Option<&'static str>) {
    let Some(addrs) = t.stacks.frames(stack) else {
        return (Vec::new(), None);
    };
    MEMO.with(|m| match m.borrow_mut().as_mut() {
        Some(memo) => memo.stack(t, sym, addrs, owned),
        None => {
            let mut out: Vec<FrameOut> = addrs
                .flat_map(|a| build_address_frames(t, sym, a))
                .collect();
            super::frame_marks::mark(&mut out, &FrameContext::of(t));
            (out, None)
        }
    })
}

thread_local! {
    /// Each return address's frames, built once while one process's report is built (see
    /// [`with_frame_memo`]); `None` outside one.
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// Runs `f` (the building of one process's report, on this thread) with each return address's
/// frames built once: a trace of a million stacks (a library's static initialisers) names the same
/// few thousand addresses in all of them, and formatting each again was most of its report. A
/// large memo is freed on a thread of its own.
pub fn with_frame_memo<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Memo>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            match MEMO.with(|m| m.replace(prev)) {
                // A thread costs more than a small memo's free.
                Some(memo) if memo.index.len() > 4096 => super::free_later::free_later(memo),
                _ => {}
            }
        }
    }
    let _restore = Restore(MEMO.with(|m| m.replace(Some(Memo::default()))));
    f()
}

/// The frames of one process's return addresses, each built once, with what marking and the
/// owner read of each frame worked out once too (their names' tests were a tenth of a PyTorch
/// job's report, stack after stack).
#[derive(Default)]
struct Memo {
    /// Each address's place in `made`.
    index: HashMap<u64, u32>,
    made: Vec<AddressFrames>,
    /// The process's (the memo is one process's).
    cx: Option<FrameContext>,
}

struct AddressFrames {
    /// Python frames with their short names.
    frames: Vec<FrameOut>,
    /// Each frame's, in the same order.
    traits: Vec<(Traits, super::owner::Traits)>,
}

impl Memo {
    /// The made frames of `addr`, made the first time.
    fn address(&mut self, t: &Replayed, sym: &mut Symbolizer, addr: u64) -> &AddressFrames {
        let Memo { index, made, cx } = self;
        let cx = cx.get_or_insert_with(|| FrameContext::of(t));
        let at = *index
            .entry(addr)
            .or_insert_with(|| make(t, sym, addr, cx, made));
        &made[at as usize]
    }

    /// A stack's frames, marked, and with `owned` its owner.
    fn stack(
        &mut self,
        t: &Replayed,
        sym: &mut Symbolizer,
        addrs: impl Iterator<Item = u64>,
        owned: bool,
    ) -> (Vec<FrameOut>, Option<&'static str>) {
        let Memo { index, made, cx } = self;
        let cx = cx.get_or_insert_with(|| FrameContext::of(t));
        let places: Vec<u32> = addrs
            .map(|a| *index.entry(a).or_insert_with(|| make(t, sym, a, cx, made)))
            .collect();
        let len = places.iter().map(|&p| made[p as usize].frames.len()).sum();
        let mut out = Vec::with_capacity(len);
        let mut traits = Vec::with_capacity(len);
        for &p in &places {
            let m = &made[p as usize];
            out.extend_from_slice(&m.frames);
            traits.extend_from_slice(&m.traits);
        }
        super::frame_marks::mark_by(&mut out, |i| traits[i].0, cx);
        let owner = owned.then(|| super::owner::owner_by(&traits, |t| t.1));
        (out, owner)
    }
}

/// Builds `addr`'s frames into `made`, returning their place.
fn make(
    t: &Replayed,
    sym: &mut Symbolizer,
    addr: u64,
    cx: &FrameContext,
    made: &mut Vec<AddressFrames>,
) -> u32 {
    let mut frames = build_address_frames(t, sym, addr);
    super::frame_marks::short_names(&mut frames, cx);
    let traits = frames
        .iter()
        .map(|f| (super::frame_marks::traits(f), super::owner::traits(f)))
        .collect();
    made.push(AddressFrames { frames, traits });
    (made.len() - 1) as u32
}

/// The frames of one return address (several where calls were inlined), innermost first, before
/// marking, with Python frames' short names.
pub fn address_frames(t: &Replayed, sym: &mut Symbolizer, addr: u64) -> Vec<FrameOut> {
    MEMO.with(|m| match m.borrow_mut().as_mut() {
        Some(memo) => memo.address(t, sym, addr).frames.clone(),
        None => {
            let mut frames = build_address_frames(t, sym, addr);
            super::frame_marks::short_names(&mut frames, &FrameContext::of(t));
            frames
        }
    })
}

fn build_address_frames(t: &Replayed, sym: &mut Symbolizer, addr: u64) -> Vec<FrameOut> {
    sym.frames(t, addr)
        .into_iter()
        .map(|f| FrameOut {
            kind: if f.python { "python" } else { "native" },
            function: f.function.map(Into::into),
            file: f.file.map(Into::into),
            line: f.line,
            module: f.module.map(Into::into),
            address: format!("{:#x}", f.address).into(),
            main_thread: f.lent,
            offset: f.offset.map(|o| format!("{o:#x}").into()),
            hidden: None,
            short_file: None,
        })
        .collect()
}

/// The program's own frame of a stack as "function (file:line)", or the function alone without a
/// line: the innermost Python frame, else the innermost named frame that is neither the CUDA runtime
/// nor the allocator, among the frames the reports show.
pub fn program_site(frames: &[FrameOut]) -> Option<String> {
    let shown: Vec<FrameOut> = super::model::frame::shown(frames)
        .into_iter()
        .cloned()
        .collect();
    let frame = shown.iter().find(|f| f.kind == "python").or_else(|| {
        let func = crate::report::owner::first_program_function(&shown)?;
        let first = shown
            .iter()
            .position(|f| f.function.as_deref() == Some(func))?;
        shown[first..]
            .iter()
            .find(|f| f.function.is_some() && !super::model::frame::is_allocator(f))
            .or(shown.get(first))
    })?;
    let func = frame.function.as_deref()?;
    Some(match (super::model::frame::file_name(frame), frame.line) {
        (Some(file), Some(line)) => format!("{func} ({file}:{line})"),
        _ => func.to_string(),
    })
}
