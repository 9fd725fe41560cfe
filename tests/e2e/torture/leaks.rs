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

/// `crash DEATH`: the same death under the shim, and the 3000 blocks of the last burst in a trace
/// that ends naming the signal.
fn crash(death: &str, signal: i32, name: &str) {
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
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert_eq!(p["end"], "signal", "{}", dump(p));
        assert_eq!(p["end_signal"], name, "{}", dump(p));
    }
}

#[test]
fn abort_right_after_a_burst() {
    crash("abort", libc::SIGABRT, "SIGABRT");
}

#[test]
fn sigsegv_right_after_a_burst() {
    crash("segv", libc::SIGSEGV, "SIGSEGV");
}

#[test]
fn sigterm_to_itself_right_after_a_burst() {
    crash("term", libc::SIGTERM, "SIGTERM");
}

/// The thin sampling mode counts every call in the process and sends the totals every 100 ms: a
/// death sooner (this one comes a few milliseconds in) must still end the trace with them, not
/// with "0 allocations" beside the sampled blocks of the burst.
#[test]
fn thin_sampling_totals_survive_a_death_right_after_a_burst() {
    for (death, name) in [("term", "SIGTERM"), ("segv", "SIGSEGV")] {
        let full = Case::new(&format!("crash_{death}_full"), &c("crash"), &[death]);
        full.all();
        let want = process_by_exe(&full.reports()[0], "crash")["heap"]["allocations"].clone();
        assert!(want.as_u64() >= Some(3000), "{want}");
        let thin = Case::new(&format!("crash_{death}_thin"), &c("crash"), &[death])
            .env("MEMSHIM_SAMPLE_BYTES", "4096");
        thin.all();
        for report in thin.reports() {
            let p = process_by_exe(&report, "crash");
            assert_eq!(p["heap"]["totals_from"], "counts", "{}", dump(p));
            assert_eq!(p["heap"]["allocations"], want, "{}", dump(p));
            assert_eq!(p["end_signal"], name, "{}", dump(p));
        }
    }
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

/// `stack_overflow [handled]`: a thread's recursion allocates 100 B per frame until its stack runs
/// out. How deep it gets depends on the stack each frame takes, so the count is not fixed, but every
/// block must be there: about 1000 frames fit in the thread's 1 MiB.
fn stack_overflow(args: &[&str], status: Option<i32>, end: &str) {
    let name = format!("stack_overflow{}", args.first().map_or("", |_| "_handled"));
    let case = Case::new(&name, &c("stack_overflow"), args);
    let bare = case.all();
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(code) => assert_eq!(bare.status.code(), Some(code), "{}", bare.describe()),
        None => assert_eq!(
            bare.status.signal(),
            Some(libc::SIGSEGV),
            "{}",
            bare.describe()
        ),
    }
    for report in case.reports() {
        let p = process_by_exe(&report, "stack_overflow");
        assert_eq!(p["truncated"], false, "{}\nnotes: {}", dump(p), p["notes"]);
        assert_eq!(p["end"], end, "{}", dump(p));
        let leaks = leaks_by_function(p, &["frame_leak"]);
        assert_eq!(leaks.len(), 1, "{}", dump(p));
        let (_, bytes, count) = &leaks[0];
        assert!(
            *count >= 500 && *bytes == 100 * count,
            "{count} blocks, {bytes} B from frame_leak:\n{}",
            dump(p)
        );
    }
}

#[test]
fn stack_overflow_with_allocating_frames() {
    stack_overflow(&[], None, "signal");
}

#[test]
fn stack_overflow_caught_on_an_alternate_stack() {
    stack_overflow(&["handled"], Some(7), "quick_exit");
}

/// The program's handler cleans up, restores the default action and raises SIGSEGV again.
#[test]
fn sigsegv_handler_that_reraises() {
    let case = Case::new("crash_segv_reraise", &c("crash"), &["segv_reraise"]);
    let bare = case.all();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        bare.status.signal(),
        Some(libc::SIGSEGV),
        "{}",
        bare.describe()
    );
    assert_eq!(bare.stdout_str(), "burst\nreraising\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "crash");
        assert_eq!(
            leaks_by_function(p, &["last_burst"]),
            expected(&[("last_burst", 300000, 3000)]),
            "{}\nnotes: {}",
            dump(p),
            p["notes"]
        );
        assert_eq!(p["end"], "signal", "{}", dump(p));
        assert_eq!(p["end_signal"], "SIGSEGV", "{}", dump(p));
    }
}
