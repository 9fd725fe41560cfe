//! The CI gate: `--fail-on LIMIT` of `run` and `report`. A limit is read once, before anything runs,
//! and checked against the finished report model; each broken limit becomes one line that says which
//! limit, by how much, and the site that contributed most. Reads the model only; prints nothing.
use std::fmt;

use crate::byte_size;
use crate::render::site_view;
use crate::report::model::frame::is_allocator;
use crate::report::model::{FrameOut, GrowthSite, LeakClass, Process, Report, Site};
use crate::units::human_bytes;

/// The exit status of a run or report that broke a limit (1 is memshim's own error).
pub const EXIT_LIMIT_BROKEN: u8 = 3;

/// One `--fail-on` limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Heap bytes still held at exit, summed over every process (the CUDA driver's own excluded).
    LeakedHeap(u64),
    /// The highest heap peak of any one process.
    PeakHeap(u64),
    /// Device bytes still allocated at exit, summed over every process (the driver's own excluded;
    /// under PyTorch's allocator, the tensors still held at exit).
    LeakedDevice(u64),
    /// The highest device peak of any one process.
    PeakDevice(u64),
    /// Any site whose memory kept growing, host or device.
    Growth,
}

impl std::str::FromStr for Limit {
    type Err = String;

    fn from_str(s: &str) -> Result<Limit, String> {
        let (name, size) = match s.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v)),
            None => (s.trim(), None),
        };
        let sized = |make: fn(u64) -> Limit| match size {
            Some(v) => byte_size::parse(v).map(make),
            None => Err(format!("--fail-on {name} needs a size: {name}=24MiB")),
        };
        match name {
            "leaked-heap" => sized(Limit::LeakedHeap),
            "peak-heap" => sized(Limit::PeakHeap),
            "leaked-device" => sized(Limit::LeakedDevice),
            "peak-device" => sized(Limit::PeakDevice),
            "growth" if size.is_none() => Ok(Limit::Growth),
            "growth" => Err("--fail-on growth takes no size (any growing site fails)".into()),
            _ => Err(format!(
                "`{s}` is not a limit; use leaked-heap=SIZE, peak-heap=SIZE, leaked-device=SIZE, \
                 peak-device=SIZE or growth"
            )),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, size) = match *self {
            Limit::LeakedHeap(b) => ("leaked-heap", b),
            Limit::PeakHeap(b) => ("peak-heap", b),
            Limit::LeakedDevice(b) => ("leaked-device", b),
            Limit::PeakDevice(b) => ("peak-device", b),
            Limit::Growth => return f.write_str("growth"),
        };
        write!(f, "{name}={}", human_bytes(size).replace(' ', ""))
    }
}

/// One line per broken limit, in the order the limits were given; empty when all hold.
pub fn check(report: &Report, limits: &[Limit]) -> Vec<String> {
    limits.iter().filter_map(|l| broken(report, *l)).collect()
}

fn broken(report: &Report, limit: Limit) -> Option<String> {
    let procs = &report.processes;
    let (limit_bytes, measured, what, top) = match limit {
        Limit::LeakedHeap(max) => {
            let total = procs.iter().map(|p| own_bytes(&p.leaks.host)).sum();
            (
                max,
                total,
                "leaked on the heap",
                top_leak(procs, |p| &p.leaks.host),
            )
        }
        Limit::LeakedDevice(max) => {
            let total = procs.iter().map(|p| own_bytes(device_leaks(p))).sum();
            (
                max,
                total,
                "of device memory leaked",
                top_leak(procs, device_leaks),
            )
        }
        Limit::PeakHeap(max) => {
            let p = procs.iter().max_by_key(|p| p.heap.peak_bytes)?;
            let site = p.heap.peak_sites.first().map(|s| (p, s, s.bytes));
            (max, p.heap.peak_bytes, "heap peak", site.map(describe))
        }
        Limit::PeakDevice(max) => {
            let p = procs.iter().max_by_key(|p| p.device.peak_bytes)?;
            // PyTorch's allocator knows which tensors were live at its peak; the driver does not.
            let site = p
                .torch
                .devices
                .iter()
                .max_by_key(|d| d.peak_allocated_bytes)
                .and_then(|d| d.peak_sites.first())
                .map(|s| (p, s, s.bytes));
            (max, p.device.peak_bytes, "device peak", site.map(describe))
        }
        Limit::Growth => return growth(procs),
    };
    if measured <= limit_bytes {
        return None;
    }
    let most = top.map_or(String::new(), |t| format!("; the most from {t}"));
    Some(format!(
        "limit {limit} broken: {} {what}, {} over{most}",
        human_bytes(measured),
        human_bytes(measured - limit_bytes)
    ))
}

/// The program's own bytes of a leak class: what the CUDA driver keeps for itself until exit, what
/// system code allocates once by design and what `--suppressions` matched are not the program's to
/// free.
fn own_bytes(c: &LeakClass) -> u64 {
    c.program_bytes
}

/// What a process left allocated on its GPUs: with PyTorch's allocator seen, the tensors still held
/// when the interpreter began to shut down (the cache's free segments are released by the process's
/// end and are no leak); otherwise what the driver saw still allocated at exit.
fn device_leaks(p: &Process) -> &LeakClass {
    if p.torch.state == "on" {
        &p.torch.held_at_end
    } else {
        &p.leaks.device
    }
}

/// The largest program site of any process's leaks of one class.
fn top_leak(procs: &[Process], class: fn(&Process) -> &LeakClass) -> Option<String> {
    procs
        .iter()
        .flat_map(|p| {
            class(p)
                .sites_of_program()
                .map(move |s| (p, s, s.estimated.as_ref().map_or(s.bytes, |e| e.bytes)))
        })
        // The first of equal sites (in the report's order), so the line is the same run after run.
        .fold(None, |best: Option<(&Process, &Site, u64)>, s| match best {
            Some(b) if b.2 >= s.2 => Some(b),
            _ => Some(s),
        })
        .map(describe)
}

fn growth(procs: &[Process]) -> Option<String> {
    let grown: Vec<(&Process, &GrowthSite)> = procs
        .iter()
        .flat_map(|p| {
            p.growth
                .host
                .iter()
                .chain(&p.growth.mappings)
                .chain(&p.growth.device)
                .chain(&p.torch.growth)
                .map(move |g| (p, g))
        })
        .collect();
    let (p, fastest) = grown
        .iter()
        .max_by(|a, b| a.1.rate_bytes_per_s.total_cmp(&b.1.rate_bytes_per_s))?;
    Some(format!(
        "limit growth broken: {} site{} kept growing; the fastest {} (+{}/s, {} -> {}) in {}",
        grown.len(),
        if grown.len() == 1 { "" } else { "s" },
        site_name(&fastest.frames),
        human_bytes(fastest.rate_bytes_per_s.max(0.0) as u64),
        human_bytes(fastest.from_bytes),
        human_bytes(fastest.to_bytes),
        process_name(p)
    ))
}

fn describe((p, s, bytes): (&Process, &Site, u64)) -> String {
    format!(
        "{} ({}) in {}",
        site_name(&s.frames),
        human_bytes(bytes),
        process_name(p)
    )
}

fn process_name(p: &Process) -> String {
    let exe = p.exe.rsplit('/').next().unwrap_or(&p.exe);
    format!("{exe} (pid {})", p.pid)
}

/// The frame a user acts on: the innermost Python line, or the innermost named native frame that is
/// not the allocator itself (a frame without a symbol is named by its module and offset only when
/// no frame has a name).
fn site_name(frames: &[FrameOut]) -> String {
    use crate::report::model::frame::{file_name, place, shown};
    let frames: Vec<FrameOut> = shown(frames).into_iter().cloned().collect();
    let (first, _) = site_view(&frames);
    let Some(f) = first
        .iter()
        .find(|f| !is_allocator(f) && f.function.is_some())
        .or_else(|| first.first())
    else {
        return "an unknown site".into();
    };
    let Some(func) = f.function.as_deref() else {
        return place(f);
    };
    match (file_name(f), f.line) {
        (Some(file), Some(line)) => format!("{func} {file}:{line}"),
        _ => match &f.module {
            Some(m) => format!("{func} ({})", m.rsplit('/').next().unwrap_or(m)),
            None => func.to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
