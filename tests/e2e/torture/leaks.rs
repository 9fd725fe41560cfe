//! Frames left without their frees: longjmp and C++ exceptions through allocating frames; and the
//! last allocations before a crash (abort, SIGSEGV, SIGTERM to itself).
use super::build::{c, cxx};
use super::harness::{leaks_by_function, Case};
use crate::report::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn longjmp_through_allocating_frames() {
    let case = Case::new("longjmp", &c("longjmp"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "jumps 50\n");
    case.assert_leaks(
        "longjmp",
        &["frame_alloc", "dive"],
        &[("frame_alloc", 240000, 5000)],
    );
}

#[test]
fn exceptions_through_allocating_frames() {
    let case = Case::new("exceptions", &cxx("exceptions"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "caught 200\n");
    // The strings of every frame and the exception objects are freed by the unwinding.
    case.assert_leaks(
        "exceptions",
        &["frame_leak", "dive"],
        &[("frame_leak", 240000, 10000)],
    );
}

/// `crash DEATH`: the same death under the shim, and the 3000 blocks of the last burst in the trace.
fn crash(death: &str, signal: i32) {
    let case = Case::new(&format!("crash_{death}"), &c("crash"), &[death]);
    let bare = case.all();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(bare.status.signal(), Some(signal), "{}", bare.describe());
    assert_eq!(bare.stdout_str(), "burst\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "crash");
        assert_eq!(
            leaks_by_function(p, &["last_burst"]),
            expected(&[("last_burst", 300000, 3000)]),
            "{}\nnotes: {}",
            dump(p),
            p["notes"]
        );
    }
}

#[test]
fn abort_right_after_a_burst() {
    crash("abort", libc::SIGABRT);
}

#[test]
fn sigsegv_right_after_a_burst() {
    crash("segv", libc::SIGSEGV);
}

#[test]
fn sigterm_to_itself_right_after_a_burst() {
    crash("term", libc::SIGTERM);
}

/// `crash DEATH_handled`: the program's own handler runs (prints, exits 42) and the burst is traced.
fn handled(death: &str, name: &str) {
    let case = Case::new(&format!("crash_{death}"), &c("crash"), &[death]);
    let bare = case.all();
    assert_eq!(bare.status.code(), Some(42), "{}", bare.describe());
    assert_eq!(bare.stdout_str(), format!("burst\nhandled {name}\n"));
    for report in case.reports() {
        let p = process_by_exe(&report, "crash");
        assert_eq!(
            leaks_by_function(p, &["last_burst"]),
            expected(&[("last_burst", 300000, 3000)]),
            "{}\nnotes: {}",
            dump(p),
            p["notes"]
        );
    }
}

#[test]
fn sigsegv_with_the_programs_own_handler() {
    handled("segv_handled", "SIGSEGV");
}

#[test]
fn sigterm_with_the_programs_own_handler() {
    handled("term_handled", "SIGTERM");
}
