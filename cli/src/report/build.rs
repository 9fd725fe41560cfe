//! Builds the report model from replayed traces: orders processes, symbolizes the stacks of the sites
//! shown, and turns nanoseconds into seconds. No analysis happens here beyond that.

use memshim_trace::EndReason;

use super::model::{
    FlameSection, HeapSummary, Leaks, Process, ProgramMemory, PythonOut, Report, Timeline,
    PEAK_SITES, SCHEMA,
};
use super::sites::leak_class_of;
use crate::bench::ceilings::Ceilings;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;

/// The report of several traces, ordered by start time, against the machines' measured `ceilings`,
/// with every part.
pub fn report(traces: Vec<Replayed>, ceilings: &[Ceilings]) -> Report {
    report_parts(traces, ceilings, true)
}

/// As [`report`]; the flame graphs only with `flame` (they name every stack ever allocated from:
/// on a PyTorch trace that is most of the report's time, spent for nothing by the text view, the
/// gate or `top`).
pub fn report_parts(mut traces: Vec<Replayed>, ceilings: &[Ceilings], flame: bool) -> Report {
    traces.sort_by_key(|t| (t.header.start_unix_ns, t.header.pid));
    let report = report_of(&traces.iter().collect::<Vec<_>>(), ceilings, flame);
    super::free_later::free_later(traces);
    report
}

/// As [`report_parts`], of traces already in order, kept by the caller (`top` reads its trace
/// further after each report).
pub fn report_of(traces: &[&Replayed], ceilings: &[Ceilings], flame: bool) -> Report {
    let mut processes: Vec<Process> = traces
        .iter()
        .map(|t| super::sites::with_frame_memo(|| process(t, ceilings, flame)))
        .collect();
    let pids: Vec<u32> = processes.iter().map(|p| p.pid).collect();
    for (p, t) in processes.iter_mut().zip(traces) {
        p.role = super::ranks::role(p, &pids, super::ranks::is_dataloader_worker(t));
    }
    let mut report = Report {
        schema: SCHEMA,
        ranks: super::ranks::section(&processes),
        processes,
        unreadable: Vec::new(),
        verdict: Vec::new(),
        notes: Vec::new(),
        totals: Default::default(),
    };
    super::verdict::fill(&mut report);
    report
}

fn process(t: &Replayed, ceilings: &[Ceilings], flame: bool) -> Process {
    // The flame graphs name every stack ever allocated from, a third of a PyTorch job's JSON
    // report, and the heap's sites at its peak replay every site's high-water history; neither
    // needs anything of the other sections. Each is built on a thread of its own meanwhile, with
    // its own symbolizer (the names are the same). The flame graphs keep what they need of each
    // return address's frames themselves, so their thread has no memo of frames. Where a thread
    // cannot start, its part is built in place.
    std::thread::scope(|s| {
        let graphs = flame.then(|| beside(s, "memshim-flame", || flame_graphs(t)));
        // A third thread where two cores are all there is would take its time from the flame
        // graphs' thread, the longest part.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let peak = (!flame || cores > 2)
            .then(|| {
                beside(s, "memshim-peak", || {
                    let mut sym = Symbolizer::default();
                    let sites = super::sites::with_frame_memo(|| peak_sites(t, &mut sym));
                    (sites, sym.problems())
                })
            })
            .flatten();
        let graphs = || match graphs {
            None => FlameSection::default(),
            Some(Some(h)) => joined(h),
            Some(None) => flame_graphs(t),
        };
        let peak = |sym: &mut Symbolizer| match peak {
            Some(h) => joined(h),
            None => (peak_sites(t, sym), Vec::new()),
        };
        sections(t, ceilings, graphs, peak)
    })
}

/// `f` on a scoped thread named `name`, or `None` if no thread could start.
fn beside<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Option<std::thread::ScopedJoinHandle<'scope, T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(s, f)
        .ok()
}

/// What a thread of [`beside`] returned; its panic goes on here.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn flame_graphs(t: &Replayed) -> FlameSection {
    super::flame::section(t, &mut Symbolizer::default())
}

/// The heap's largest sites at its peak, grouped by Python location.
fn peak_sites(t: &Replayed, sym: &mut Symbolizer) -> Vec<super::model::Site> {
    let peak = t.heap.peak_sites();
    let groups = super::sites::weighted_groups(t, &peak);
    let peak = crate::analysis::python_sites::regroup(&peak, &groups);
    let mut sites = super::sites::ranked_sites(t, sym, &peak, PEAK_SITES);
    // What a sampled site stood for at the peak is not kept: the figures are its own.
    sites.iter_mut().for_each(|s| s.estimated = None);
    sites
}

/// The process's report: its flame graphs from `flame` and the heap's sites at its peak from
/// `peak`, with the notes of the symbolizer that named them (each called once, after the other
/// sections that need no result of theirs).
fn sections(
    t: &Replayed,
    ceilings: &[Ceilings],
    flame: impl FnOnce() -> FlameSection,
    peak: impl FnOnce(&mut Symbolizer) -> (Vec<super::model::Site>, Vec<String>),
) -> Process {
    let mut sym = Symbolizer::default();
    let ns_to_s = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    let host_sites = super::sites::by_location(t, t.heap.sites());
    let mmap_sites = super::sites::by_location(t, t.mmap.sites());
    let mut host = leak_class_of(t, &mut sym, &host_sites);
    let mmap = leak_class_of(t, &mut sym, &mmap_sites);
    let [device, managed, pinned, registered] = super::device::leaks(t, &mut sym);
    let device_section = super::device::section(t, &mut sym, &device);
    let growth = super::growth::section(t, &mut sym, &host_sites, &mmap_sites);
    let torch = super::torch::section(t, &mut sym);
    let transfers = super::transfers::section(t, &mut sym, ceilings);
    let peak_time_s = if t.heap.peak_bytes > 0 {
        ns_to_s(t.heap.peak_t)
    } else {
        0.0
    };
    let (peak_sites, peak_problems) = peak(&mut sym);
    let mut heap = HeapSummary {
        totals_from: super::counted::FROM_EVENTS,
        totals_note: None,
        allocations: t.heap.allocations,
        frees: t.heap.frees,
        allocated_bytes: t.heap.allocated_bytes,
        peak_bytes: t.heap.peak_bytes,
        peak_time_s,
        live_bytes: t.heap.live_bytes,
        live_count: t.heap.live_count(),
        temporary_allocations: t.heap.temporary,
        unknown_frees: t.heap.unknown_frees,
        peak_sites,
        peak_sites_bytes: t.heap.peak_bytes,
        peak_sites_time_s: peak_time_s,
    };
    if let Some(c) = &t.heap_totals {
        super::counted::apply(c, ns_to_s, &mut heap, &mut host);
    }
    let flame = flame();
    let mut notes = t.notes.clone();
    if let Some(c) = &t.corrupt {
        notes.push(format!("reading stopped early: {c}"));
    }
    if t.still_writing {
        notes.push(format!(
            "the trace is still being written: its process {} is running, so these are the figures so far (run the report again when it has ended)",
            t.header.pid
        ));
    } else if t.truncated && t.corrupt.is_none() {
        notes.push(
            "the trace ends without the shim closing it: the process was killed or crashed, or ended through the exit system call itself (a Go program does), so the last moments (up to 100 ms) may be missing and \"leaks\" are what was live when it died"
                .into(),
        );
    }
    let no_malloc = t.heap.allocations == 0
        && t.heap_totals
            .as_ref()
            .is_none_or(|c| c.last.allocations == 0);
    let exec_ended = t.end.as_ref().is_some_and(|e| e.reason == EndReason::Exec);
    if no_malloc && t.corrupt.is_none() && !exec_ended && !t.still_writing {
        notes.push(if t.truncated {
            "no allocation is in the trace, which ends early: the process died or tracing stopped before the shim wrote any, so 0 allocations is not a measurement".into()
        } else {
            "no malloc call reached the shim: the program allocates nothing on the heap, or uses an allocator of its own (statically linked, or one that never calls libc's malloc)".into()
        });
    }
    if let Some(a) = &t.attached {
        notes.insert(
            0,
            format!(
                "attached {:.1} s after the process started ({} calls redirected in {} loaded objects): what it allocated before is not known, so its frees of those blocks ({}) are counted apart and never subtracted; not seen after attach: {}",
                a.process_age_ns as f64 / 1e9,
                a.slots,
                a.modules,
                t.heap.unknown_frees,
                a.unseen
            ),
        );
    }
    // The same module's problem may be met by both symbolizers.
    let mut problems = sym.problems();
    problems.extend(peak_problems);
    problems.sort();
    problems.dedup();
    notes.extend(problems);
    let mut p = Process {
        pid: t.header.pid,
        ppid: t.header.ppid,
        exe: t.header.exe.clone(),
        argv: t.header.argv.clone(),
        command: super::command::name(&t.header.exe, &t.header.argv),
        program_memory: ProgramMemory {
            bytes: t.program_peak.bytes + device_section.peak_bytes,
            host_bytes: t.program_peak.bytes,
            heap_bytes: t.program_peak.heap_bytes,
            mapped_bytes: t.program_peak.mapped_bytes,
            host_time_s: ns_to_s(t.program_peak.t),
            device_bytes: device_section.peak_bytes,
            device_time_s: device_section.peak_time_s,
            rss_peak_bytes: None,
        },
        hostname: t.header.hostname.clone(),
        trace: t.path.display().to_string(),
        start_unix_ns: t.header.start_unix_ns,
        duration_s: ns_to_s(t.last_t),
        forked: t.header.forked,
        truncated: t.truncated,
        still_writing: t.still_writing,
        end: t.end.as_ref().map(|e| end_name(e.reason)),
        attached_after_s: t.attached.as_ref().map(|a| a.process_age_ns as f64 / 1e9),
        end_signal: t.end.as_ref().and_then(|e| match e.reason {
            EndReason::Signal(n) => Some(signal_name(n)),
            _ => None,
        }),
        dropped_events: t.dropped,
        missing_frames: t.frame_damage.missing_frames,
        sampling_bytes: (t.heap.sample_bytes > 0).then_some(t.heap.sample_bytes),
        rank: super::ranks::rank(t),
        role: String::new(),
        verdict_items: 0,
        python: t.python.as_ref().map(|p| PythonOut {
            version: p.version.clone(),
            frames: p.frames,
            reason: (!p.frames).then(|| p.reason.clone()),
        }),
        notes,
        heap,
        flame,
        leaks: Leaks {
            host,
            mmap,
            device,
            managed,
            pinned,
            registered,
        },
        growth,
        device: device_section,
        torch,
        transfers,
        timeline: Timeline {
            host_live: series(t.host_live(), t.header.clock_start_ns),
            device_live: series(&t.device.series, t.header.clock_start_ns),
            transfers: {
                let mut series = super::transfers::bandwidth(t);
                series.extend(super::gpus::pcie_series(t));
                series
            },
        },
        numa: super::system::numa(t, &mut sym),
        counters: super::counters::counters(t),
        fragmentation: super::fragmentation::fragmentation(t),
    };
    if p.heap.totals_from != super::counted::FROM_EVENTS {
        // Only sampled blocks were events: the heap's peak is the shim's counted one, and the
        // mappings' own peak stands beside it (an upper bound of their sum at one moment).
        let m = &mut p.program_memory;
        m.heap_bytes = p.heap.peak_bytes;
        m.mapped_bytes = t.mmap.peak_bytes;
        m.host_bytes = m.heap_bytes + m.mapped_bytes;
        m.host_time_s = p.heap.peak_time_s;
        m.bytes = m.host_bytes + m.device_bytes;
    }
    let rss = p.fragmentation.peak_rss_bytes;
    p.program_memory.rss_peak_bytes = (rss > 0).then_some(rss);
    super::figures::process(&mut p);
    p
}

/// A series with times in seconds since the process started.
fn series(s: &crate::analysis::timeline::Series, start_ns: u64) -> Vec<(f64, u64)> {
    s.points()
        .iter()
        .map(|&(t, v)| (t.saturating_sub(start_ns) as f64 / 1e9, v))
        .collect()
}

/// A signal's name, as `kill -l` spells it.
fn signal_name(n: i32) -> String {
    let name = match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => return format!("signal {n}"),
    };
    name.to_string()
}

fn end_name(r: EndReason) -> &'static str {
    match r {
        EndReason::Exit => "exit",
        EndReason::QuickExit => "quick_exit",
        EndReason::Exec => "exec",
        EndReason::Failure => "failure",
        EndReason::Signal(_) => "signal",
        EndReason::Detached => "detached",
    }
}
