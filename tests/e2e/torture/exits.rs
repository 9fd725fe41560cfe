//! Unusual ends: pthread_exit from main while other threads go on, quick_exit with handlers that
//! allocate, SIGKILL after a burst, and the exit system call made through glibc's `syscall`.
use super::build::c;
use super::harness::{leaks_by_function, Case};
use crate::report::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn pthread_exit_from_main_while_threads_allocate() {
    let case = Case::new("main_thread_exit", &c("main_thread_exit"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "workers done 4\n");
    case.assert_leaks(
        "main_thread_exit",
        &["main_leak", "worker_leak"],
        &[("main_leak", 500, 1), ("worker_leak", 240, 4)],
    );
}

#[test]
fn quick_exit_with_handlers_that_allocate() {
    let case = Case::new("quick_exit", &c("quick_exit"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "quick\nhandler ran\n");
    assert_eq!(bare.status.code(), Some(5));
    for report in case.reports() {
        let p = process_by_exe(&report, "quick_exit");
        assert_eq!(p["end"], "quick_exit", "{}", dump(p));
        assert_eq!(p["truncated"], false, "{}", dump(p));
        // The handler freed make_blocks' 1000 blocks after main had handed over to quick_exit.
        assert_eq!(
            leaks_by_function(p, &["handler_leak", "make_blocks"]),
            expected(&[("handler_leak", 77, 1)]),
            "{}",
            dump(p)
        );
    }
}

/// SIGKILL runs nothing of the shim's: what survives is what the writer had put on disk. It does so
/// as soon as its queue goes quiet, so a burst followed by an 80 ms pause is all there; before, the
/// last 100 ms frame was lost whole (all 3000 blocks, with any pause under about 100 ms).
#[test]
fn sigkill_after_a_burst_and_a_pause_loses_nothing_of_the_burst() {
    let case = Case::new("kill_burst", &c("kill_burst"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "burst done\n");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&bare.status),
        Some(9)
    );
    for report in case.reports() {
        let p = process_by_exe(&report, "kill_burst");
        assert_eq!(p["truncated"], true, "SIGKILL leaves no end: {}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["burst_leak"]),
            expected(&[("burst_leak", 300000, 3000)]),
            "{}\nnotes: {}",
            dump(p),
            p["notes"]
        );
    }
}

/// `syscall(SYS_exit_group, 3)` right after a burst: the shim's `syscall` hook closes the trace as
/// `_exit` does, so it ends whole, with every block of the burst and the program's own status.
#[test]
fn exit_group_through_syscall() {
    let case = Case::new("raw_exit_group", &c("raw_exit_group"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "exiting 3\n");
    assert_eq!(bare.status.code(), Some(3));
    for report in case.reports() {
        let p = process_by_exe(&report, "raw_exit_group");
        assert_eq!(p["end"], "quick_exit", "{}", dump(p));
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["exit_leak"]),
            expected(&[("exit_leak", 100_000, 1000)]),
            "{}",
            dump(p)
        );
    }
}
