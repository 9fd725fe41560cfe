//! Text for a terminal: a summary per process, then the top leak sites with their stacks.
use std::io::{self, Write};

use super::{one_line, python_line, site_view, Render};
use crate::report::model::{FrameOut, LeakClass, PlacementOut, Process, Report};
use crate::units::human_bytes;

mod diff;
mod first_screen;
mod gpu;
mod overview;
mod torch;
mod torch_steps;

/// The text renderer.
pub struct Text {
    /// Sites shown per section.
    pub top: usize,
}

/// Frames shown per site.
const FRAMES_SHOWN: usize = 8;
/// Native frames shown under a Python site.
const NATIVE_SHOWN: usize = 4;

impl Render for Text {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        first_screen::verdict(report, out)?;
        if report.processes.len() > 1 {
            writeln!(out)?;
            overview::overview(report, out)?;
        }
        for p in &report.processes {
            writeln!(out)?;
            self.process(p, out)?;
        }
        first_screen::notes(report, out)?;
        for u in &report.unreadable {
            writeln!(
                out,
                "\nNOT READ: {}: {}",
                one_line(&u.trace),
                one_line(&u.why)
            )?;
        }
        Ok(())
    }
}

impl Text {
    fn process(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let cmd = one_line(&if p.argv.is_empty() {
            p.exe.clone()
        } else {
            p.argv.join(" ")
        });
        writeln!(out, "== {cmd}  (pid {}, {:.3} s)", p.pid, p.duration_s)?;
        let mut status = vec![match p.end {
            Some("exit") => "exited normally".to_string(),
            Some("quick_exit") => "exited with _exit".to_string(),
            Some("exec") => "replaced itself with exec".to_string(),
            Some("signal") => format!(
                "killed by {} (everything recorded up to it is in the trace)",
                p.end_signal.as_deref().unwrap_or("a signal")
            ),
            Some(other) => format!("ended: {other}"),
            None if p.still_writing => {
                "STILL BEING WRITTEN: the process is running; figures so far".to_string()
            }
            None => "TRUNCATED: the trace was not closed (killed or crashed)".to_string(),
        }];
        if p.forked {
            status.push(format!("forked from pid {}", p.ppid));
        }
        if p.dropped_events > 0 {
            status.push(format!("{} events dropped", p.dropped_events));
        }
        writeln!(out, "   {}; trace {}", status.join("; "), p.trace)?;
        if let Some(line) = python_line(p) {
            writeln!(out, "   {line}")?;
        }
        for n in &p.notes {
            writeln!(out, "   note: {n}")?;
        }
        first_screen::peak(p, out)?;
        self.growth(p, out)?;
        let h = &p.heap;
        writeln!(out, "heap: {}", super::heap_line(h))?;
        if let Some(n) = h.totals_note {
            writeln!(out, "   {n}")?;
        }
        self.leaks(&p.leak_title("heap"), "blocks", &p.leaks.host, out)?;
        self.leaks(
            "anonymous mappings still mapped",
            "mappings",
            &p.leaks.mmap,
            out,
        )?;
        if p.device.seen {
            self.device(p, out)?;
        }
        self.torch(p, out)?;
        if !p.transfers.summary.is_empty() {
            self.transfers(p, out)?;
        }
        self.system(p, out)
    }

    fn system(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let f = &p.fragmentation;
        if f.samples > 0 {
            writeln!(
                out,
                "heap fragmentation: at most {} free held in the arena ({:.0}%), arena peak {}, resident peak {}",
                human_bytes(f.peak_free_held_bytes),
                f.peak_free_held_ratio * 100.0,
                human_bytes(f.peak_arena_bytes),
                human_bytes(f.peak_rss_bytes)
            )?;
            for c in f.size_classes.iter().take(3) {
                writeln!(out, "  {}", super::numa_lines::size_class_line(c))?;
            }
        }
        let measured: Vec<String> = p
            .counters
            .values
            .iter()
            .filter_map(|c| c.value.map(|v| format!("{} {v}", c.name)))
            .collect();
        if !measured.is_empty() {
            writeln!(out, "counters: {}", measured.join(", "))?;
        }
        if let Some(line) = super::numa_lines::counter_series_line(&p.counters) {
            writeln!(out, "  {line}")?;
        }
        if !p.numa.nodes.is_empty() {
            writeln!(
                out,
                "numa: {} node(s), {} placement and affinity calls",
                p.numa.nodes.len(),
                p.numa.calls.len()
            )?;
        }
        if !p.numa.bytes_by_node.is_empty() {
            let nodes: Vec<String> = p
                .numa
                .bytes_by_node
                .iter()
                .map(|n| format!("node {}: {}", n.node, human_bytes(n.bytes)))
                .collect();
            writeln!(out, "  large buffers by node: {}", nodes.join(", "))?;
        }
        for b in p.numa.placements.iter().take(self.top) {
            writeln!(out, "  {}", placement_line(b))?;
        }
        showing(out, self.top, p.numa.placements.len(), "placements")?;
        let migrated = || p.numa.threads.iter().filter(|t| t.migrated);
        for th in migrated().take(self.top) {
            writeln!(out, "  {}", super::numa_lines::thread_line(th))?;
        }
        showing(
            out,
            self.top,
            p.numa.migrated_threads as usize,
            "threads that migrated",
        )?;
        for c in p.numa.calls.iter().take(self.top) {
            let mut args = Vec::new();
            if let Some(policy) = &c.policy {
                args.push(policy.clone());
            }
            if !c.nodes.is_empty() {
                args.push(format!("nodes {:?}", c.nodes));
            }
            if !c.cpus.is_empty() {
                args.push(format!("cpus {:?}", c.cpus));
            }
            if c.bytes > 0 {
                args.push(human_bytes(c.bytes));
            }
            let site = c.site.as_deref().unwrap_or("??");
            writeln!(
                out,
                "  {}({}) = {} in {site}",
                c.call,
                args.join(", "),
                c.result
            )?;
        }
        showing(out, self.top, p.numa.calls.len(), "placement calls")?;
        for finding in p
            .fragmentation
            .findings
            .iter()
            .chain(&p.counters.findings)
            .chain(&p.numa.findings)
            // The machine's notes are said once, after the processes.
            .filter(|f| f.severity != "info")
        {
            writeln!(out, "  finding: {}", finding.text)?;
        }
        Ok(())
    }

    fn growth(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        for (what, list) in [
            ("host heap", &p.growth.host),
            ("anonymous mappings", &p.growth.mappings),
            ("device memory", &p.growth.device),
        ] {
            if list.is_empty() {
                continue;
            }
            writeln!(
                out,
                "growing {what}: {}",
                crate::units::blocks(list.len() as u64, "site")
            )?;
            for (i, g) in list.iter().take(self.top).enumerate() {
                writeln!(
                    out,
                    "  #{:<2} {} at {:.3} s -> {} at {:.3} s ({}/s), {} held at the end",
                    i + 1,
                    human_bytes(g.from_bytes),
                    g.from_time_s,
                    human_bytes(g.to_bytes),
                    g.to_time_s,
                    human_bytes(g.rate_bytes_per_s as u64),
                    human_bytes(g.live_bytes)
                )?;
                write_stack(out, &g.frames, FRAMES_SHOWN)?;
            }
            showing(out, self.top, list.len(), "sites")?;
        }
        for (i, g) in p.growth.released.iter().take(self.top).enumerate() {
            writeln!(
                out,
                "released growth #{} ({}): {} at {:.3} s -> {} at {:.3} s, given back at {:.3} s ({} held at the end)",
                i + 1,
                g.memory,
                human_bytes(g.from_bytes),
                g.from_time_s,
                human_bytes(g.peak_bytes),
                g.peak_time_s,
                g.released_time_s,
                human_bytes(g.live_bytes)
            )?;
            write_stack(out, &g.frames, FRAMES_SHOWN)?;
        }
        showing(
            out,
            self.top,
            p.growth.released.len(),
            "sites of released growth",
        )?;
        for f in &p.growth.findings {
            writeln!(out, "  finding: {}", f.text)?;
        }
        Ok(())
    }

    fn leaks(&self, title: &str, unit: &str, c: &LeakClass, out: &mut dyn Write) -> io::Result<()> {
        use crate::units::blocks;
        if c.program_count == 0 {
            writeln!(out, "{title}: none")?;
        } else {
            writeln!(
                out,
                "{title}: {} in {} from {}",
                human_bytes(c.program_bytes),
                blocks(c.program_count, unit),
                blocks(c.program_sites, "sites")
            )?;
        }
        if c.driver_count > 0 {
            writeln!(
                out,
                "  (plus {} in {} from {} that the CUDA driver allocated for itself and keeps until exit)",
                human_bytes(c.driver_bytes),
                blocks(c.driver_count, unit),
                blocks(c.driver_sites, "sites")
            )?;
        }
        for line in super::set_apart::by_design_lines(c, unit)
            .into_iter()
            .chain(super::set_apart::suppressed_lines(c, unit))
        {
            writeln!(out, "  plus {line}")?;
        }
        if c.unsampled_count > 0 {
            writeln!(
                out,
                "  ({} in {} were allocated without a sampled stack; the sites below are scaled estimates)",
                human_bytes(c.unsampled_bytes),
                blocks(c.unsampled_count, unit)
            )?;
        }
        for (i, s) in c.sites_of_program().take(self.top).enumerate() {
            match &s.estimated {
                Some(e) => writeln!(
                    out,
                    "  #{:<2} about {} in about {} (estimated from {} sampled)",
                    i + 1,
                    human_bytes(e.bytes),
                    blocks(e.count, unit),
                    crate::units::thousands(s.count)
                )?,
                None => writeln!(
                    out,
                    "  #{:<2} {} in {} (of {} allocated here)",
                    i + 1,
                    human_bytes(s.bytes),
                    blocks(s.count, unit),
                    crate::units::thousands(s.allocations)
                )?,
            }
            if s.owner == "nccl" {
                writeln!(
                    out,
                    "        (NCCL's: communicator buffers, kept for the job's life)"
                )?;
            }
            write_stack(out, &s.frames, FRAMES_SHOWN)?;
        }
        if c.program_sites > self.top as u64 {
            writeln!(
                out,
                "  ... {} more sites (--top to see more)",
                c.program_sites - self.top as u64
            )?;
        }
        Ok(())
    }
}

/// A site's stack: up to `shown` frames, Python frames first with the native frames they called
/// into one level down (see [`site_view`]); start-up, import and interpreter frames left out (see
/// `report::frame_marks`).
fn write_stack(out: &mut dyn Write, frames: &[FrameOut], shown: usize) -> io::Result<()> {
    let frames: Vec<FrameOut> = crate::report::model::frame::shown(frames)
        .into_iter()
        .cloned()
        .collect();
    let (first, native) = site_view(&frames);
    if first.first().is_some_and(|f| f.main_thread) {
        writeln!(
            out,
            "        (the main thread's Python frames: this thread ran no Python code)"
        )?;
    }
    for f in first.iter().take(shown) {
        writeln!(out, "        {}", frame_line(f))?;
    }
    if !native.is_empty() {
        writeln!(out, "          native, innermost first:")?;
        for f in native.iter().take(NATIVE_SHOWN) {
            writeln!(out, "            {}", frame_line(f))?;
        }
    }
    let listed = first.len().min(shown) + native.len().min(NATIVE_SHOWN);
    if frames.len() > listed {
        writeln!(out, "        ... {} more frames", frames.len() - listed)?;
    }
    Ok(())
}

/// A sampled large block: where its pages are against where the thread that allocated it ran.
fn placement_line(b: &PlacementOut) -> String {
    let sampled = b.sampled_pages;
    let place = match b.node {
        Some(node) if b.pages_by_node.len() == 1 => format!("on node {node}"),
        Some(node) => {
            let pages: Vec<String> = b
                .pages_by_node
                .iter()
                .map(|(n, pages)| format!("{pages} on node {n}"))
                .collect();
            format!(
                "mostly on node {node} (sampled pages: {})",
                pages.join(", ")
            )
        }
        None => format!("not yet touched ({sampled} pages sampled)"),
    };
    let untouched = if b.absent_pages > 0 && b.node.is_some() {
        format!(", {} of {sampled} sampled pages untouched", b.absent_pages)
    } else {
        String::new()
    };
    let by = match (b.alloc_cpu, b.alloc_node) {
        (Some(cpu), Some(node)) => format!(", allocated on CPU {cpu} of node {node}"),
        (Some(cpu), None) => format!(", allocated on CPU {cpu}"),
        _ => String::new(),
    };
    let remote = if b.remote { ": REMOTE" } else { "" };
    let site = b
        .site
        .as_deref()
        .and_then(|func| {
            b.frames
                .iter()
                .find(|f| f.function.as_deref() == Some(func))
        })
        .map(|f| format!(" in {}", frame_line(f)))
        .unwrap_or_default();
    format!(
        "{} {} {place}{untouched}{by}{remote}{site}{}",
        human_bytes(b.bytes),
        b.memory,
        super::numa_lines::cause_suffix(b)
    )
}

fn frame_line(f: &FrameOut) -> String {
    use crate::report::model::frame::{file_name, place};
    match (f.function.as_deref(), file_name(f), f.line) {
        (Some(func), Some(file), Some(line)) => format!("{func}  {file}:{line}"),
        (Some(func), _, _) => format!("{func}  ({})", place(f)),
        (None, _, _) => place(f),
    }
}

/// Where a list was cut to `--top`: "showing 10 of 549 sites (--top to see more)".
fn showing(out: &mut dyn Write, top: usize, total: usize, what: &str) -> io::Result<()> {
    if total > top {
        writeln!(out, "  showing {top} of {total} {what} (--top to see more)")?;
    }
    Ok(())
}
