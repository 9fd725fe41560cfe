//! What changed between two runs, for checking a fix: per process (paired by program name, in start
//! order), the change in peak and leaked memory, the call sites that leak more or less (matched by
//! the function names of the frames the reports show, Python frames with their files, since
//! addresses move between runs), and transfers by kind.
use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{FrameOut, LeakClass, Process, Report};

/// Frames that identify a site across runs.
const KEY_FRAMES: usize = 8;

/// The difference between two reports.
#[derive(Serialize, Debug)]
pub struct Diff {
    pub schema: &'static str,
    pub processes: Vec<ProcessDiff>,
    /// Processes present in only one of the runs, by program name.
    pub only_before: Vec<String>,
    pub only_after: Vec<String>,
}

/// One pair of processes.
#[derive(Serialize, Debug)]
pub struct ProcessDiff {
    pub program: String,
    pub pid_before: u32,
    pub pid_after: u32,
    pub peak_heap: Change,
    pub leaked_heap: Change,
    pub peak_device: Change,
    pub leaked_device: Change,
    /// Sites whose leaked bytes changed, largest change first.
    pub sites: Vec<SiteChange>,
    /// Transfer bytes by "direction host_memory".
    pub transfers: Vec<TransferChange>,
}

/// A number before and after.
#[derive(Serialize, Debug, PartialEq)]
pub struct Change {
    pub before: u64,
    pub after: u64,
    pub delta: i64,
}

impl Change {
    fn new(before: u64, after: u64) -> Change {
        Change {
            before,
            after,
            delta: after as i64 - before as i64,
        }
    }
}

/// A leak site that changed.
#[derive(Serialize, Debug)]
pub struct SiteChange {
    /// "host" or "device".
    pub memory: &'static str,
    /// Its innermost function names, innermost first.
    pub functions: Vec<String>,
    pub bytes: Change,
    pub count: Change,
}

/// Transfers of one kind before and after.
#[derive(Serialize, Debug)]
pub struct TransferChange {
    pub kind: String,
    pub bytes: Change,
    pub count: Change,
}

/// Compares two reports; sites whose leaked bytes changed by less than `min_bytes` are left out
/// (the noise of allocations that differ by a few bytes from run to run).
pub fn diff(before: &Report, after: &Report, min_bytes: u64) -> Diff {
    let mut out = Diff {
        schema: "memshim.diff/1",
        processes: Vec::new(),
        only_before: Vec::new(),
        only_after: Vec::new(),
    };
    let mut unmatched: Vec<&Process> = after.processes.iter().collect();
    for b in &before.processes {
        match unmatched.iter().position(|a| program(a) == program(b)) {
            Some(i) => {
                let a = unmatched.remove(i);
                out.processes.push(process(b, a, min_bytes));
            }
            None => out.only_before.push(program(b)),
        }
    }
    out.only_after = unmatched.into_iter().map(program).collect();
    out
}

fn program(p: &Process) -> String {
    p.exe.rsplit('/').next().unwrap_or(&p.exe).to_string()
}

fn process(b: &Process, a: &Process, min_bytes: u64) -> ProcessDiff {
    let mut sites = Vec::new();
    for (memory, cb, ca) in [
        ("host", &b.leaks.host, &a.leaks.host),
        ("device", &b.leaks.device, &a.leaks.device),
    ] {
        let (mb, ma) = (by_key(cb), by_key(ca));
        let keys: std::collections::BTreeSet<&Vec<String>> = mb.keys().chain(ma.keys()).collect();
        for k in keys {
            let (bb, bc) = mb.get(k).copied().unwrap_or((0, 0));
            let (ab, ac) = ma.get(k).copied().unwrap_or((0, 0));
            let moved = ab.abs_diff(bb);
            if (bb != ab || bc != ac) && (moved >= min_bytes || min_bytes == 0) {
                sites.push(SiteChange {
                    memory,
                    functions: k.clone(),
                    bytes: Change::new(bb, ab),
                    count: Change::new(bc, ac),
                });
            }
        }
    }
    sites.sort_by(|x, y| {
        y.bytes
            .delta
            .unsigned_abs()
            .cmp(&x.bytes.delta.unsigned_abs())
    });
    let transfers_of = |p: &Process| -> BTreeMap<String, (u64, u64)> {
        p.transfers
            .summary
            .iter()
            .map(|r| {
                (
                    format!("{} {}", r.direction, r.host_memory),
                    (r.bytes, r.count),
                )
            })
            .collect()
    };
    let (tb, ta) = (transfers_of(b), transfers_of(a));
    let kinds: std::collections::BTreeSet<&String> = tb.keys().chain(ta.keys()).collect();
    let transfers = kinds
        .into_iter()
        .map(|k| {
            let (bb, bc) = tb.get(k).copied().unwrap_or((0, 0));
            let (ab, ac) = ta.get(k).copied().unwrap_or((0, 0));
            TransferChange {
                kind: k.clone(),
                bytes: Change::new(bb, ab),
                count: Change::new(bc, ac),
            }
        })
        .collect();
    ProcessDiff {
        program: program(b),
        pid_before: b.pid,
        pid_after: a.pid,
        peak_heap: Change::new(b.heap.peak_bytes, a.heap.peak_bytes),
        leaked_heap: Change::new(own(&b.leaks.host), own(&a.leaks.host)),
        peak_device: Change::new(b.device.peak_bytes, a.device.peak_bytes),
        leaked_device: Change::new(b.leaks.device.bytes, a.leaks.device.bytes),
        sites,
        transfers,
    }
}

fn own(c: &LeakClass) -> u64 {
    c.program_bytes
}

/// The program's sites by their function names: (bytes, count), summed when names coincide.
fn by_key(c: &LeakClass) -> BTreeMap<Vec<String>, (u64, u64)> {
    let mut m: BTreeMap<Vec<String>, (u64, u64)> = BTreeMap::new();
    for s in c.sites_of_program() {
        let e = m.entry(key(&s.frames)).or_default();
        e.0 += s.bytes;
        e.1 += s.count;
    }
    m
}

/// A site's identity across runs: the frames the reports show (a Python site by its Python frames,
/// which the native frames under them would otherwise crowd out), each by its function; a frame
/// without a symbol by its module and offset, which do not move between runs.
fn key(frames: &[FrameOut]) -> Vec<String> {
    let shown: Vec<FrameOut> = super::model::frame::shown(frames)
        .into_iter()
        .cloned()
        .collect();
    let (first, _) = crate::render::site_view(&shown);
    first
        .iter()
        .take(KEY_FRAMES)
        .map(|f| match (&f.function, super::model::frame::file_name(f)) {
            // `<module>` is every script's: a Python frame is named with its file (not its line,
            // which a fix moves).
            (Some(func), Some(file)) if f.kind == "python" => format!("{func} ({file})"),
            (Some(func), _) => func.to_string(),
            (None, _) => super::model::frame::place(f),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_changes_are_noise_and_python_sites_go_by_their_python_frames() {
        let before = crate::render::fixture_report();
        let mut after = crate::render::fixture_report();
        after.processes[0].leaks.host.sites[1].bytes += 24;
        after.processes[0].leaks.host.bytes += 24;
        let all = diff(&before, &after, 0);
        assert_eq!(all.processes[0].sites.len(), 1);
        assert_eq!(all.processes[0].sites[0].bytes.delta, 24);
        assert_eq!(all.processes[0].sites[0].functions, ["make_batch", "main"]);
        assert!(diff(&before, &after, 64).processes[0].sites.is_empty());
        // The device site reached from Python is named by its Python frames, not `cudaMalloc`.
        let gone = diff(&before, &crate::render::fixture_report_without_device(), 0);
        let python: Vec<&Vec<String>> = gone.processes[0]
            .sites
            .iter()
            .filter(|s| s.memory == "device")
            .map(|s| &s.functions)
            .collect();
        assert!(
            python.contains(&&vec![
                "train_step (train.py)".to_string(),
                "<module> (train.py)".to_string()
            ]),
            "{python:?}"
        );
    }
}
