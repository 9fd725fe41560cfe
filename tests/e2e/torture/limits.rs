//! Resource limits the program lives under: RLIMIT_NOFILE of 4 (set by the program, or by its
//! parent before exec), an address-space limit with malloc returning NULL, and a file-size limit
//! the program sets on itself.
use super::build::c;
use super::harness::{leaks_by_function, Case};
use crate::report::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn nofile_limit_of_four_set_by_the_program() {
    let case = Case::new("nofile_self", &c("nofile"), &["self"]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "fopen ok\n");
    case.assert_leaks("nofile", &["nofile_leak"], &[("nofile_leak", 64, 1)]);
}

#[test]
fn nofile_limit_of_four_set_before_exec() {
    let prog = c("nofile");
    let args = ["--nofile=4:4", "--", prog.to_str().expect("utf-8 path")];
    let case = Case::new("nofile_parent", std::path::Path::new("prlimit"), &args);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "fopen ok\n");
    case.assert_leaks("nofile", &["nofile_leak"], &[("nofile_leak", 64, 1)]);
}

#[test]
fn address_space_limit_and_malloc_returning_null() {
    let case = Case::new("rlimit_as", &c("rlimit_as"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "null handled\nenough yes\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "rlimit_as");
        assert_eq!(
            leaks_by_function(p, &["after_null_leak"]),
            expected(&[("after_null_leak", 128, 1)]),
            "{}\nnotes: {}",
            dump(p),
            p["notes"]
        );
    }
}

/// The program fills its address space to the last byte with small blocks, so the shim's own heap
/// runs dry as well: the program must run on exactly as bare (no "memory allocation failed" abort),
/// and the trace must either hold everything or end with the shim's note at the point it stopped.
#[test]
fn address_space_filled_to_the_last_byte_stops_tracing_not_the_program() {
    let case = Case::new("rlimit_as_full", &c("rlimit_as_full"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "null handled\nagain ok\n24 MiB yes\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "rlimit_as_full");
        let notes = p["notes"].to_string();
        if p["end"] == "failure" {
            assert!(
                notes.contains("could not map memory for its own use"),
                "a trace stopped for memory says so: {notes}"
            );
            assert_eq!(p["truncated"], false, "{}", dump(p));
        } else {
            assert_eq!(p["end"], "exit", "{}\nnotes: {notes}", dump(p));
            assert_eq!(
                leaks_by_function(p, &["full_leak"]),
                expected(&[("full_leak", 64, 1)]),
                "{}",
                dump(p)
            );
        }
    }
}

#[test]
fn three_hundred_threads_with_a_descriptor_each_under_a_limit_of_400() {
    let case = Case::new("many_threads_fds", &c("many_threads_fds"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "threads 300 opened 300\n");
    case.assert_leaks(
        "many_threads_fds",
        &["thread_leak"],
        &[("thread_leak", 9000, 300)],
    );
}

/// A program that limits the size of the files it writes must not be killed by SIGXFSZ for the
/// shim's trace, and the trace (made before the limit, as the shim's constructor runs first) must
/// still hold everything.
#[test]
fn file_size_limit_set_by_the_program() {
    let case = Case::new("fsize", &c("fsize"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "wrote 100\n");
    case.assert_leaks("fsize", &["fsize_leak"], &[("fsize_leak", 64, 1)]);
}

/// The same limit set through the raw system call, and the program killed with SIGKILL long after
/// its trace passed the limit: the trace (stored into the room it took before the limit, never
/// closed) is read whole up to the last burst. `memshim run` cuts the room's unwritten rest off; the
/// preloaded run's trace keeps it, and the reader ends at its zeros.
#[test]
fn file_size_limit_then_sigkill() {
    let case = Case::new("fsize_kill", &c("fsize_kill"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "burst done\n");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&bare.status),
        Some(9)
    );
    for report in case.reports() {
        let p = process_by_exe(&report, "fsize_kill");
        assert_eq!(p["truncated"], true, "SIGKILL leaves no end: {}", dump(p));
        assert!(!p["notes"].to_string().contains("corrupt"), "{}", dump(p));
        // Every call before the kill: the loop, the burst and stdout's buffer.
        assert_eq!(p["heap"]["allocations"], 303_001, "{}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["burst_leak"]),
            expected(&[("burst_leak", 300_000, 3000)]),
            "{}",
            dump(p)
        );
    }
    let size = |dir: &std::path::Path| {
        let files = crate::util::trace_files(dir);
        assert_eq!(files.len(), 1, "{files:?}");
        std::fs::metadata(&files[0]).expect("trace").len()
    };
    let run = size(&case.run_traces());
    // Its frames, without the room's rest: 45 KB since frames are stored in columns.
    assert!(
        (16 << 10..1 << 20).contains(&run),
        "memshim run's trace: {run} B"
    );
    assert!(size(&case.preload_traces()) >= 1 << 30, "the room stays");
}
