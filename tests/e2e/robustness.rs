//! `memshim report` (and `info`) on damaged input: a clear one-line error or a truncated report,
//! never a panic.
//!
//! # Safety
//! A `pre_exec` closure runs between fork and exec, so it makes only async-signal-safe calls
//! (`setrlimit`, `signal`) on memory it owns.
#![allow(unsafe_code)]
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::report::*;
use crate::util::*;

const NO_ARGS: [&str; 0] = [];

/// A real trace (of leaky.c) and its bytes.
fn good_trace(dir: &TestDir) -> (PathBuf, Vec<u8>) {
    let prog = dir.compile("leaky.c");
    memshim_run_ok(dir, &prog, &NO_ARGS);
    let files = trace_files(&dir.traces());
    assert_eq!(files.len(), 1, "one trace: {files:?}");
    let bytes = std::fs::read(&files[0])
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", files[0].display()));
    assert!(
        bytes.len() > 100,
        "a trace of leaky.c is more than 100 bytes: {}",
        bytes.len()
    );
    (files[0].clone(), bytes)
}

/// Writes `bytes` as `<dir>/<name>/leaky.1.mshim` (its own directory, so it can be reported alone).
fn damaged(dir: &TestDir, name: &str, bytes: &[u8]) -> PathBuf {
    let sub = dir.path(name);
    std::fs::create_dir_all(&sub)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", sub.display()));
    let path = sub.join("leaky.1.mshim");
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

fn assert_no_panic(out: &Outcome) {
    assert!(
        !out.stderr_str().contains("panicked") && !out.stdout_str().contains("panicked"),
        "memshim panicked: {}",
        out.describe()
    );
    assert!(
        out.status.code().is_some(),
        "memshim was killed by a signal: {}",
        out.describe()
    );
}

fn assert_one_line_error(out: &Outcome) {
    let err = out.stderr_str();
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("memshim: "),
        "expected one `memshim: ...` line on stderr: {}",
        out.describe()
    );
}

/// `memshim report --format json PATH` on a damaged trace: either a non-zero exit with a one-line
/// error, or success with every process marked truncated.
fn check_report(path: &Path) {
    let out = memshim(&[
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("json"),
        path.as_os_str(),
    ]);
    assert_no_panic(&out);
    if out.status.success() {
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "report of {} is not JSON ({e}): {}",
                path.display(),
                out.describe()
            )
        });
        check_shape(&report);
        let report = crate::report::unpack(report);
        let procs = processes(&report);
        assert!(
            !procs.is_empty(),
            "exit 0 but no process for {}: {}",
            path.display(),
            out.describe()
        );
        for p in procs {
            assert_eq!(
                p["truncated"],
                true,
                "a damaged trace must be reported truncated: {}",
                dump(p)
            );
        }
    } else {
        assert_one_line_error(&out);
    }
}

/// `memshim info PATH` on a damaged trace: no panic; an error is one line.
fn check_info(path: &Path) {
    let out = memshim(&[OsStr::new("info"), path.as_os_str()]);
    assert_no_panic(&out);
    if !out.status.success() {
        assert_one_line_error(&out);
    }
}

#[test]
fn report_on_empty_file() {
    let dir = TestDir::new("report_on_empty_file");
    let path = damaged(&dir, "empty", &[]);
    check_report(&path);
    check_info(&path);
}

#[test]
fn report_on_cut_traces() {
    let dir = TestDir::new("report_on_cut_traces");
    let (_, bytes) = good_trace(&dir);
    for (name, len) in [
        ("first10", 10),
        ("half", bytes.len() / 2),
        ("all_but_1", bytes.len() - 1),
    ] {
        let path = damaged(&dir, name, &bytes[..len]);
        check_report(&path);
        check_info(&path);
    }
}

#[test]
fn report_on_garbage_in_middle() {
    let dir = TestDir::new("report_on_garbage_in_middle");
    let (_, mut bytes) = good_trace(&dir);
    let mid = bytes.len() / 2;
    for (i, b) in bytes[mid..mid + 64].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(73) ^ 0xA5;
    }
    let path = damaged(&dir, "garbage", &bytes);
    check_report(&path);
    check_info(&path);
    // Also as part of a directory.
    check_report(path.parent().expect("the damaged trace's directory"));
}

#[test]
fn report_on_missing_path() {
    let dir = TestDir::new("report_on_missing_path");
    let missing = dir.path("no-such-trace.mshim");
    let out = memshim(&[
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("json"),
        missing.as_os_str(),
    ]);
    assert_no_panic(&out);
    assert!(
        !out.status.success(),
        "a missing path must fail: {}",
        out.describe()
    );
    assert!(
        out.stderr_str()
            .contains(missing.to_str().expect("utf-8 path")),
        "the error should name {}: {}",
        missing.display(),
        out.describe()
    );
    assert!(
        out.stderr_str().starts_with("memshim: "),
        "{}",
        out.describe()
    );
}

/// A disk that fills (here: a hard file-size limit, with SIGXFSZ ignored, so the shim's writes fail
/// with EFBIG as they would with ENOSPC, and the limit cannot be raised at the end): the frames wait
/// in memory, the program runs on unchanged, one warning says how many bytes could not be written,
/// and the trace stays within the limit, made of whole frames. It still ends: when the limit leaves
/// no space for the end record, the newest frames on disk are cut off to make it, so the report
/// says the process exited and that frames are missing, never that it was killed.
#[test]
fn a_full_disk_stops_tracing_but_not_the_program() {
    let dir = TestDir::new("a_full_disk_stops_tracing_but_not_the_program");
    let prog = dir.compile("many_leaks.c");
    // Where the limit falls among the frames decides whether the end record has space left: one
    // limit in about thirty left none before the end could cut frames back for it. The whole
    // trace's size varies with how its events fall into frames (150 runs on an idle machine: 15.0
    // to 37.6 KiB), so every limit stays well under the smallest.
    for limit in [
        6 << 10,
        (7 << 10) + 300,
        8 << 10,
        (9 << 10) + 500,
        (10 << 10) + 700,
        (11 << 10) + 200,
    ] {
        full_disk_at(&dir, &prog, limit);
    }
}

fn full_disk_at(dir: &TestDir, prog: &std::path::Path, limit: u64) {
    use std::os::unix::process::CommandExt;
    let traces = dir.path(&format!("traces-{limit}"));
    let mut cmd = std::process::Command::new(&artifacts().memshim);
    cmd.args(["run", "--quiet", "-o"])
        .arg(&traces)
        .arg("--")
        .arg(prog);
    // SAFETY: between fork and exec only async-signal-safe calls are made: setrlimit and signal.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().expect("memshim runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{limit}: {stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("many_leaks: done"));
    assert!(
        stderr.contains("bytes of its frames (File too large"),
        "{limit}: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one warning, once: {stderr}");
    let report = report_json(&traces);
    let p = process_by_exe(&report, "many_leaks");
    assert_eq!(p["truncated"], false, "{limit}: {}", dump(p));
    assert_eq!(p["end"], "exit", "{limit}: {}", dump(p));
    let notes = p["notes"].to_string();
    assert!(
        notes.contains("missing") || notes.contains("lost"),
        "{limit}: {notes}"
    );
    assert!(p["heap"]["allocations"].is_u64());
    let size = std::fs::metadata(trace_files(&traces)[0].clone())
        .expect("trace")
        .len();
    assert!(size <= limit, "{limit}: {size}");
}

/// A real full disk: the traces go to a tmpfs of 2 MiB (mounted in a mount namespace of the test's
/// own) and the program writes a trace of several MiB. The program runs on and exits as it would
/// have; one warning says how much was lost and why; the trace holds its end and the program's last
/// allocations (the newest frames are the ones the reserved space takes); the report says the disk
/// filled, counts the missing frames, and its verdict says the trace is incomplete and calls no leak
/// more than low.
#[test]
fn a_full_tmpfs_keeps_the_end_and_the_last_allocations() {
    let dir = TestDir::new("a_full_tmpfs_keeps_the_end_and_the_last_allocations");
    let prog = dir.compile("disk_filler.c");
    let mnt = dir.path("small_disk");
    std::fs::create_dir_all(&mnt).expect("mount point");
    let json = dir.path("report.json");
    let script = r#"mount -t tmpfs -o size=2m memshim-test "$1" || exit 90
"$2" run --quiet -o "$1/traces" -- "$3"
status=$?
"$2" report -f json "$1/traces" > "$4" || exit 91
ls -l "$1/traces" >&2
exit $status"#;
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(&artifacts().memshim)
        .arg(&prog)
        .arg(&json)
        .output()
        .expect("unshare runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "disk_filler: done\n");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("memshim["))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning, once: {stderr}");
    assert!(
        warnings[0].contains("bytes of its frames (No space left on device"),
        "{stderr}"
    );
    let report: Value = crate::report::parse(&std::fs::read(&json).expect("report"));
    let p = process_by_exe(&report, "disk_filler");
    assert_eq!(p["end"], "exit", "{}", dump(p));
    assert_eq!(p["truncated"], false, "{}", dump(p));
    assert!(p["missing_frames"].as_u64() > Some(0), "{}", dump(p));
    assert!(
        p["notes"].to_string().contains("No space left on device"),
        "{}",
        p["notes"]
    );
    assert_eq!(
        user_summary(p, "host", &["last_leak"]),
        vec![("last_leak".to_string(), 5000, 5)],
        "{}",
        dump(p)
    );
    let verdict = report["verdict"].as_array().expect("verdict");
    assert_eq!(verdict[0]["kind"], "trace_incomplete", "{verdict:?}");
    for v in verdict.iter().filter(|v| v["kind"] == "leak") {
        assert_eq!(v["severity"], "low", "{v}");
    }
}

#[test]
fn threads_with_the_smallest_stacks_run_as_they_do_bare() {
    let dir = TestDir::new("small_stacks");
    let prog = dir.compile_with(
        "small_stacks.c",
        "small_stacks",
        &["-g", "-O1", "-lpthread"],
    );
    for unwind in ["libunwind", "gcc"] {
        let _ = std::fs::remove_dir_all(dir.traces());
        let mut cmd = memshim_cmd();
        cmd.args(["run", "--quiet", "-o"])
            .arg(dir.traces())
            .arg("--")
            .arg(&prog)
            .env("MEMSHIM_UNWIND", unwind)
            .current_dir(&dir.root);
        let out = run_ok(&mut cmd);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.matches(" ok\n").count(), 3, "{unwind}: {stdout}");
        let report = report_json(&dir.traces());
        let p = process_by_exe(&report, "small_stacks");
        assert!(
            p["heap"]["allocations"].as_u64().unwrap() >= 3000,
            "{unwind}"
        );
        assert!(
            user_sites(p, "host", &["deep"]).is_empty(),
            "{unwind}: deep() frees all it allocates"
        );
    }
}

/// A crash, `abort` or SIGTERM right after a burst of allocations: the process dies the same way
/// (status 128 + the signal, as bare), and the trace holds every allocation of the last moment, with
/// an end that names the signal.
#[test]
fn the_last_allocations_before_a_crash_are_in_the_trace() {
    let dir = TestDir::new("the_last_allocations_before_a_crash_are_in_the_trace");
    let prog = dir.compile("crash_after_burst.c");
    for (how, signal, number) in [
        ("segv", "SIGSEGV", 11),
        ("abort", "SIGABRT", 6),
        ("term", "SIGTERM", 15),
        ("default", "SIGSEGV", 11),
    ] {
        let bare = run_bare(&dir.root, &prog, &[how]);
        let _ = std::fs::remove_dir_all(dir.traces());
        let out = memshim_run(&dir, &prog, &[how]);
        assert_eq!(
            out.status.code(),
            Some(128 + number),
            "{how}: {}",
            out.describe()
        );
        assert_eq!(out.stdout_str(), bare.stdout_str(), "{how}");
        let report = report_json(&dir.traces());
        let p = process_by_exe(&report, "crash_after_burst");
        assert_eq!(p["end"], "signal", "{how}");
        assert_eq!(p["end_signal"], signal, "{how}");
        assert_eq!(p["truncated"], false, "{how}");
        let burst = sites(p, "host")
            .iter()
            .find(|s| functions(s).contains(&"burst"))
            .unwrap_or_else(|| panic!("{how}: no site in burst: {p:#}"));
        assert_eq!(bytes_count(burst), (300_000, 3000), "{how}");
    }
}
