//! The CI gate: `memshim run --fail-on` and `memshim report --fail-on` on a real program, with the
//! exact bytes and the site in the line that says which limit broke.
use crate::report::{process_by_exe, report_json};
use crate::util::*;

/// The program's own leaked heap bytes, from the JSON report (the line must agree with it): less
/// the driver's own, what the C library keeps by design and what suppressions matched.
fn leaked_heap(dir: &TestDir) -> u64 {
    let r = report_json(&dir.traces());
    let p = process_by_exe(&r, "gate_leak");
    let host = &p["leaks"]["host"];
    let n = |k: &str| host[k].as_u64().unwrap();
    n("bytes") - n("driver_bytes") - n("by_design_bytes") - n("suppressed_bytes")
}

fn human(n: u64) -> String {
    // The CLI's own formatting, repeated here on purpose: the test pins what users read.
    if n < 1024 {
        return format!("{n} B");
    }
    let units = ["KiB", "MiB", "GiB"];
    let (mut v, mut u) = (n as f64 / 1024.0, 0);
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

fn gate_run(dir: &TestDir, prog: &std::path::Path, args: &[&str], limits: &[&str]) -> Outcome {
    let mut cmd = memshim_cmd();
    cmd.arg("run").arg("--quiet").arg("-o").arg(dir.traces());
    for l in limits {
        cmd.arg("--fail-on").arg(l);
    }
    cmd.arg("--").arg(prog).args(args).current_dir(&dir.root);
    run_command(&mut cmd)
}

#[test]
fn run_fails_with_status_3_naming_the_limit_the_bytes_and_the_site() {
    let dir = TestDir::new("gate_run_broken");
    let prog = dir.compile("gate_leak.c");
    let out = gate_run(
        &dir,
        &prog,
        &["2048", "0"],
        &["leaked-heap=1MiB", "peak-heap=1G"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", out.describe());
    let leaked = leaked_heap(&dir);
    assert!(leaked >= 2048 * 1024, "{leaked}");
    let err = out.stderr_str();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [format!(
            "memshim: limit leaked-heap=1.0MiB broken: {} leaked on the heap, {} over; \
             the most from hold_buffer gate_leak.c:16 (2.0 MiB) in gate_leak (pid {})",
            human(leaked),
            human(leaked - (1 << 20)),
            process_by_exe(&report_json(&dir.traces()), "gate_leak")["pid"]
        )],
        "{}",
        out.describe()
    );
}

#[test]
fn limits_that_hold_leave_the_status_alone() {
    let dir = TestDir::new("gate_run_holds");
    let prog = dir.compile("gate_leak.c");
    let out = gate_run(&dir, &prog, &["64", "0"], &["leaked-heap=1MiB", "growth"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert_eq!(out.stderr_str(), "");
}

#[test]
fn the_commands_own_failure_wins_and_the_limit_is_still_reported() {
    let dir = TestDir::new("gate_run_failed_command");
    let prog = dir.compile("gate_leak.c");
    let out = gate_run(&dir, &prog, &["2048", "5"], &["leaked-heap=1MiB"]);
    assert_eq!(out.status.code(), Some(5), "{}", out.describe());
    assert!(
        out.stderr_str().contains("limit leaked-heap=1.0MiB broken"),
        "{}",
        out.describe()
    );
}

#[test]
fn report_fails_after_printing_the_report() {
    let dir = TestDir::new("gate_report");
    let prog = dir.compile("gate_leak.c");
    memshim_run_ok(&dir, &prog, &["3072", "0"]);
    let traces = dir.traces();
    let out = run_command(memshim_cmd().arg("report").arg(&traces).args([
        "--fail-on",
        "leaked-heap=4MiB",
        "--fail-on",
        "leaked-heap=2.5M",
    ]));
    assert_eq!(out.status.code(), Some(3), "{}", out.describe());
    assert!(
        out.stdout_str().contains("hold_buffer"),
        "{}",
        out.describe()
    );
    let err = out.stderr_str();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("memshim: limit leaked-heap=2.5MiB broken: ")
            && err.contains("the most from hold_buffer gate_leak.c:16 (3.0 MiB)"),
        "{err}"
    );
}

#[test]
fn a_limit_that_is_not_one_is_refused_before_the_command_runs() {
    let dir = TestDir::new("gate_bad_limit");
    let prog = dir.compile("gate_leak.c");
    let out = gate_run(&dir, &prog, &["1", "0"], &["leaks=1M"]);
    assert_eq!(out.status.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr_str().contains("`leaks=1M` is not a limit"),
        "{}",
        out.describe()
    );
    assert!(trace_files(&dir.traces()).is_empty(), "the command ran");
}
