//! Threads: bursts, detached threads at exit, TLS and `thread_local` destructors, atexit and global
//! destructors, `_exit` from a thread, `pthread_getattr_np` before a thread's first allocation.
use super::build::{c, cxx};
use super::harness::Case;
use crate::report::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn thread_bursts_and_detached_threads_at_exit() {
    let case = Case::new("thread_burst", &c("thread_burst"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "bursts 8 threads 128\n");
    case.assert_leaks(
        "thread_burst",
        &["thread_leak", "main_leak"],
        &[("thread_leak", 12800, 128), ("main_leak", 1234, 1)],
    );
}

/// The blocks glibc keeps for a thread's thread-locals, the shim's unwinder's included, are freed
/// when the next thread reuses the stack: no free of a block the trace never saw, in either mode,
/// and the thin mode's counts equal the full trace's.
#[test]
fn threads_one_after_another() {
    let case = Case::new("threads_one_by_one", &c("threads_one_by_one"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "threads 300\n");
    case.assert_leaks(
        "threads_one_by_one",
        &["one_by_one_leak"],
        &[("one_by_one_leak", 1500000, 300)],
    );
    let full = case.reports();
    let full = &process_by_exe(&full[0], "threads_one_by_one")["heap"];
    let thin = case.thin_report();
    let thin = &process_by_exe(&thin, "threads_one_by_one")["heap"];
    assert_eq!(full["unknown_frees"], 0, "{full}");
    assert_eq!(thin["totals_from"], "counts");
    for key in ["allocations", "frees", "live_count"] {
        assert_eq!(thin[key], full[key], "heap.{key}: thin {thin}\nfull {full}");
    }
}

#[test]
fn pthread_key_destructors_that_allocate() {
    let case = Case::new("tls_dtors", &c("tls_dtors"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "threads 8 dtors 8\n");
    case.assert_leaks(
        "tls_dtors",
        &["key_dtor_leak", "body", "dtor"],
        &[("key_dtor_leak", 616, 8)],
    );
}

#[test]
fn thread_local_destructors_that_allocate() {
    let case = Case::new("thread_local_dtors", &cxx("thread_local_dtors"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "threads 8\n");
    case.assert_leaks(
        "thread_local_dtors",
        &["tl_dtor_leak", "body", "Holder"],
        &[("tl_dtor_leak", 495, 9)],
    );
}

#[test]
fn atexit_handlers_and_global_destructors_that_allocate() {
    let case = Case::new("atexit_dtors", &cxx("atexit_dtors"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "main done\natexit ran\ndtor ran\n");
    // main's 1000 blocks are freed by the handler and the global's buffer by its destructor, both
    // after main returned: none of them may be left as a leak.
    case.assert_leaks(
        "atexit_dtors",
        &["atexit_leak", "global_dtor_leak", "make_blocks", "Global"],
        &[("atexit_leak", 44, 1), ("global_dtor_leak", 66, 1)],
    );
}

#[test]
fn underscore_exit_from_a_thread() {
    let case = Case::new("thread_exit", &c("thread_exit"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "before exit\n");
    assert_eq!(bare.status.code(), Some(3));
    case.assert_leaks("thread_exit", &["before_exit"], &[("before_exit", 999, 1)]);
}

#[test]
fn pthread_getattr_np_before_the_first_allocation() {
    let case = Case::new("getattr_first", &c("getattr_first"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "stacks ok 4\n");
    case.assert_leaks(
        "getattr_first",
        &["after_getattr_leak"],
        &[("after_getattr_leak", 200, 4)],
    );
    for report in case.reports() {
        assert_eq!(process_by_exe(&report, "getattr_first")["truncated"], false);
    }
}

#[test]
fn pthread_cancel_of_allocating_threads() {
    let case = Case::new("cancel", &c("cancel"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "cancelled 8\n");
    // A thread cancelled in its write leaves its loop's block behind, so only thread_leak is fixed.
    case.assert_leaks("cancel", &["thread_leak"], &[("thread_leak", 320, 8)]);
}

/// A cancel already pending while a thread allocates: the shim's own calls must not be where it acts
/// (libunwind reads a pipe to test addresses; acted on there, glibc's forced unwind met the hooks'
/// panic guard and aborted the process, every run).
#[test]
fn a_pending_cancel_is_not_acted_on_inside_the_shim() {
    let case = Case::new("cancel_pending", &c("cancel_pending"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "cancelled 20\n");
    case.assert_leaks(
        "cancel_pending",
        &["pending_leak", "leaf"],
        &[("pending_leak", 480, 20)],
    );
}

/// In the thin mode a process keeps its one thread while it has one: the shim's writer and sampler
/// wait (their work done on the program's thread at its sends) until the program starts a thread,
/// then start. Nothing is lost on either side of that moment: the thin counts equal the full trace's.
#[test]
fn helpers_wait_for_the_programs_second_thread_in_the_thin_mode() {
    let case = Case::new("late_thread", &c("late_thread"), &["tasks.txt"]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "done\n");
    // The thin run is the last of `all`.
    let tasks = std::fs::read_to_string(case.dir.path("tasks.txt")).expect("tasks.txt");
    assert_eq!(
        tasks, "tasks 1\n",
        "the thin run had helper threads while alone"
    );
    case.assert_leaks(
        "late_thread",
        &["alone_leak", "thread_leak"],
        &[("alone_leak", 100000, 1000), ("thread_leak", 100000, 500)],
    );
    let full = case.reports();
    let full = &process_by_exe(&full[0], "late_thread")["heap"];
    let thin = case.thin_report();
    let thin = &process_by_exe(&thin, "late_thread")["heap"];
    assert_eq!(thin["totals_from"], "counts");
    for key in ["allocations", "frees", "live_count"] {
        assert_eq!(thin[key], full[key], "heap.{key}: thin {thin}\nfull {full}");
    }
}
