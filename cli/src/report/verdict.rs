//! The verdict: the few things worth acting on over every process of a report, most pressing
//! first (by severity, then by the bytes at stake), each with its process, its site and its fix.
//! Drawn from the report model after filtering, so every format shows the same verdict; it only
//! reads the sections, it never changes a figure.
use std::cmp::Reverse;

use super::model::{Finding, LeakClass, Process, Report, Totals, Verdict};
use super::severity::{self, findings};
use super::site_label::{is_user_python, label};
pub use super::verdict_items::{fix, LEAK_MEDIUM_BYTES};
use super::verdict_items::{growth_item, item, released_item, Climb};
use crate::units::human_bytes;

/// Things kept in the verdict.
pub const MAX_VERDICT: usize = 10;
/// What to do about the heap a Python process still held at its end.
const HELD_BY_PYTHON: &str = "nothing is lost by itself: the interpreter leaves this to the process's end; look at the largest sites if the total is more than the program should keep";
/// Growing and released sites of one process taken into the verdict, per kind.
const SITES_PER_PROCESS: usize = 3;

/// Gives every finding its severity and fills the report's verdict (with each process's count of
/// its items), notes and totals.
pub fn fill(report: &mut Report) {
    severity::assign(report);
    report.notes = severity::machine_notes(report);
    let mut v: Vec<Verdict> = report.processes.iter().flat_map(process).collect();
    v.extend(
        report
            .ranks
            .iter()
            .flat_map(|r| &r.findings)
            .filter_map(|f| {
                let pid = report.processes.first().map_or(0, |p| p.pid);
                from_finding(f, pid, "the job", "")
            }),
    );
    v.sort_by_key(|x| (severity::rank(x.severity), Reverse(x.bytes.unwrap_or(0))));
    let mut v = grouped(v);
    v.truncate(MAX_VERDICT);
    report.verdict = v;
    for p in &mut report.processes {
        p.verdict_items = report.verdict.iter().filter(|v| v.pid == p.pid).count() as u64;
    }
    report.totals = totals(&report.processes);
}

/// One item for each kind of thing per program: the ten helpers a launcher script runs, each
/// leaking what a shell keeps until exit, are one line (the largest, saying how many more), not ten.
/// Items of one kind about different memory are not the same thing: a kind such as
/// `held_at_exit` covers tensors and heap blocks alike, told apart by their fix (a PyTorch job's
/// 64 MiB of tensors once took in its DataLoader workers' heap as "the same in 2 more processes").
fn grouped(v: Vec<Verdict>) -> Vec<Verdict> {
    let program = |x: &Verdict| x.program.split(' ').next().unwrap_or("").to_string();
    let mut out: Vec<(Verdict, u64, u64)> = Vec::new();
    for x in v {
        match out.iter_mut().find(|(o, _, _)| {
            o.kind == x.kind && o.fix == x.fix && program(o) == program(&x) && o.trace != x.trace
        }) {
            Some((_, more, bytes)) => {
                *more += 1;
                *bytes += x.bytes.unwrap_or(0);
            }
            None => out.push((x, 0, 0)),
        }
    }
    out.into_iter()
        .map(|(mut x, more, bytes)| {
            if more > 0 {
                x.text.push_str(&format!(
                    " (and the same in {more} more {} process{}, {} in all)",
                    program(&x),
                    if more == 1 { "" } else { "es" },
                    human_bytes(bytes + x.bytes.unwrap_or(0))
                ));
            }
            x
        })
        .collect()
}

fn totals(ps: &[Process]) -> Totals {
    Totals {
        processes: ps.len() as u64,
        leaked_host_bytes: ps.iter().map(|p| p.leaks.host.program_bytes).sum(),
        peak_program_bytes: ps.iter().map(|p| p.program_memory.bytes).max().unwrap_or(0),
        sum_peak_program_bytes: ps.iter().map(|p| p.program_memory.bytes).sum(),
        allocations: ps.iter().map(|p| p.heap.allocations).sum(),
    }
}

fn process(p: &Process) -> Vec<Verdict> {
    let item = |kind, bytes, site, text, fix: &str| item(p, kind, bytes, site, text, fix);
    // With PyTorch's allocator seen from the inside, its tensors say what the driver-level view of
    // its cache says less well (the cache's growth blamed on whichever tensor grew it, segments
    // freed only by the process's end read as leaks): those items come from the tensors instead.
    let torch = super::verdict_torch::inside(p);
    let mut v = Vec::new();
    for (memory, list) in [
        ("heap", &p.growth.host),
        ("anonymous mappings", &p.growth.mappings),
        ("device memory", &p.growth.device),
    ] {
        let shown = list
            .iter()
            .filter(|g| !torch || !super::verdict_torch::through_cache(&g.frames));
        for g in shown.take(SITES_PER_PROCESS) {
            v.push(growth_item(p, memory, g));
        }
    }
    let released = p.growth.released.iter().filter(|r| {
        !torch || r.memory != "device" || !super::verdict_torch::through_cache(&r.frames)
    });
    for r in released.take(SITES_PER_PROCESS) {
        let memory = match r.memory {
            "device" => "device memory",
            "mappings" => "anonymous mappings",
            _ => "heap",
        };
        let climb = Climb {
            from: (r.from_bytes, r.from_time_s),
            peak: (r.peak_bytes, r.peak_time_s),
            released_s: r.released_time_s,
        };
        v.push(released_item(p, memory, &r.frames, &climb));
    }
    if let Some((bytes, count, sites, top)) = own_leaks(p, &p.leaks.host) {
        // An interpreter frees little at exit: what its program and the libraries it loaded still
        // held then is not lost memory by itself (a leak that matters keeps growing, and is said
        // as growth), so it is said as held, not as a leak.
        let (kind, what, to_do) = if p.detached() {
            (
                "held_at_detach",
                "still held when memshim detached",
                fix("held_at_detach"),
            )
        } else if p.python.is_some() {
            (
                "held_at_exit",
                "still held when the process ended",
                HELD_BY_PYTHON,
            )
        } else {
            ("leak", "never freed", fix("leak"))
        };
        v.push(item(
            kind,
            bytes,
            top.clone(),
            format!(
                "{} in {count} heap block{} from {sites} site{} {what}; the most at {}",
                human_bytes(bytes),
                plural(count),
                plural(sites),
                top.as_deref().unwrap_or("an unnamed site")
            ),
            to_do,
        ));
    }
    if p.python.is_none() {
        if let Some((bytes, count, _, top)) = own_leaks(p, &p.leaks.mmap) {
            if bytes >= 1 << 20 {
                let (kind, when, to_do) = if p.detached() {
                    ("held_at_detach", "when memshim detached", "held_at_detach")
                } else {
                    ("mapping_leak", "at the end", "leak")
                };
                v.push(item(
                    kind,
                    bytes,
                    top.clone(),
                    format!(
                        "{} in {count} anonymous mapping{} still mapped {when}; the most at {}",
                        human_bytes(bytes),
                        plural(count),
                        top.as_deref().unwrap_or("an unnamed site")
                    ),
                    fix(to_do),
                ));
            }
        }
    }
    if torch {
        v.extend(super::verdict_torch::items(p, SITES_PER_PROCESS));
    }
    if p.missing_frames > 0 {
        incomplete(p, &mut v);
    }
    let capacity_bound = findings(p).any(|f| f.kind == "capacity_bound");
    v.extend(
        findings(p)
            .filter(|f| !matches!(f.kind, "growth" | "released_growth"))
            .filter(|f| !torch || !super::verdict_torch::said_by_tensors(f.kind))
            // NVML's reading of a full GPU says what the device section's peak says, with the
            // whole device's figures: one of them is enough.
            .filter(|f| f.kind != "near_capacity" || !capacity_bound)
            .filter_map(|f| from_finding(f, p.pid, &p.command, &p.trace)),
    );
    v
}

/// Frames are missing from `p`'s trace: what is live at its end includes blocks freed in them, so
/// no leak or growth of it is called more than low, each says why, and one item says what is
/// missing and what to do. Growth given back counts too: frees lost with the frames make a site
/// that only churned look as if it climbed until its last frees were seen.
fn incomplete(p: &Process, v: &mut Vec<Verdict>) {
    const DOUBT: &str =
        "; frames are missing from this trace, so some of this may have been freed in them";
    for x in v.iter_mut() {
        if matches!(
            x.kind,
            "leak"
                | "mapping_leak"
                | "held_at_exit"
                | "held_at_detach"
                | "growth"
                | "released_growth"
        ) {
            x.severity = "low";
            x.text.push_str(DOUBT);
        }
    }
    let n = p.missing_frames;
    let mut missing = item(
        p,
        "trace_incomplete",
        0,
        None,
        format!(
            "{n} frame{} of this trace could not be written (its notes say why): the events in them are not in the figures",
            plural(n)
        ),
        fix("trace_incomplete"),
    );
    // What the missing frames held is not known: no amount to rank or print.
    missing.bytes = None;
    v.push(missing);
}

/// The program's own leaked blocks of `c`: bytes, blocks, sites and the largest site's label. In a
/// Python process only sites with a frame of the program's own Python files count: what the
/// interpreter keeps from its start-up and imports is not the program's to free.
fn own_leaks(p: &Process, c: &LeakClass) -> Option<(u64, u64, u64, Option<String>)> {
    let own: Vec<_> = c
        .sites
        .iter()
        .filter(|s| s.owner == "program")
        .filter(|s| p.python.is_none() || from_the_program(&s.frames))
        .collect();
    let bytes: u64 = own.iter().map(|s| s.bytes).sum();
    (bytes > 0).then(|| {
        (
            bytes,
            own.iter().map(|s| s.count).sum(),
            own.len() as u64,
            own.first().and_then(|s| label(&s.frames)),
        )
    })
}

/// True for a Python stack that the program's own code started: a frame of its files, and an
/// outermost Python frame that is its own too (or a thread's start): what the interpreter's
/// start-up imported (`site`, `.pth` files) starts in the import machinery or the standard library.
fn from_the_program(frames: &[crate::report::model::FrameOut]) -> bool {
    let mut python = frames.iter().filter(|f| f.kind == "python");
    let outermost = python.clone().next_back();
    python.any(is_user_python)
        && outermost.is_some_and(|f| {
            is_user_python(f)
                || f.file
                    .as_deref()
                    .is_some_and(|x| x.ends_with("/threading.py"))
        })
}

/// A finding worth acting on (high or medium) as a verdict.
fn from_finding(f: &Finding, pid: u32, program: &str, trace: &str) -> Option<Verdict> {
    matches!(f.severity, "high" | "medium").then(|| Verdict {
        kind: f.kind,
        severity: f.severity,
        pid,
        program: program.to_string(),
        trace: trace.to_string(),
        bytes: f.bytes,
        site: f.site.clone(),
        text: f.text.clone(),
        fix: fix(f.kind).to_string(),
    })
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_verdict_is_ranked_by_severity_then_bytes() {
        let mut r = crate::render::fixture_report();
        fill(&mut r);
        let got: Vec<(&str, u32, Option<u64>)> =
            r.verdict.iter().map(|v| (v.kind, v.pid, v.bytes)).collect();
        assert_eq!(
            got,
            vec![
                ("out_of_memory", 100, Some(32 << 20)),
                ("released_growth", 100, Some(40 << 20)),
                ("growth", 100, Some(1 << 20)),
                ("leak", 101, Some(512)),
            ]
        );
        // The Python process's native-only leak sites are the interpreter's, not in the verdict.
        assert_eq!(r.verdict[1].site.as_deref(), Some("grow (train.py:5)"));
        assert_eq!(
            r.verdict[2].site.as_deref(),
            Some("cache_result (train.c:55)")
        );
        assert_eq!(r.verdict[3].program, "train");
        assert_eq!(r.totals.processes, 2);
        assert_eq!(r.totals.leaked_host_bytes, 4396 + 512);
    }

    fn held(trace: &str, bytes: u64, fix: &str) -> Verdict {
        Verdict {
            kind: "held_at_exit",
            severity: "low",
            pid: 1,
            program: "python3 train.py".into(),
            trace: trace.into(),
            bytes: Some(bytes),
            site: None,
            text: format!("{bytes} held"),
            fix: fix.into(),
        }
    }

    #[test]
    fn the_same_kind_about_other_memory_is_not_grouped() {
        let v = vec![
            held("main", 64 << 20, "tensors"),
            held("main", 26 << 20, "heap"),
            held("worker1", 117 << 10, "heap"),
            held("worker2", 118 << 10, "heap"),
        ];
        let g = grouped(v);
        let got: Vec<(&str, &str)> = g
            .iter()
            .map(|x| (x.trace.as_str(), x.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("main", "67108864 held"),
                (
                    "main",
                    "27262976 held (and the same in 2 more python3 processes, 26.2 MiB in all)"
                ),
            ]
        );
    }
}
