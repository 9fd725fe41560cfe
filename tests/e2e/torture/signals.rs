//! Signal handlers that allocate while the interrupted code allocates: SIGALRM from a fast interval
//! timer on the main thread, and SIGUSR1 sent to several allocating threads.
use super::build::c;
use super::harness::{leaks_by_function, Case};
use crate::report::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn sigalrm_handler_allocates_while_main_allocates() {
    let case = Case::new("sigalrm", &c("sigalrm"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "sigalrm done\nsignals many\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "sigalrm");
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert_eq!(p["end"], "exit", "{}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["alarm_main_leak", "on_alarm"]),
            expected(&[("alarm_main_leak", 4000, 1)]),
            "{}",
            dump(p)
        );
    }
}

#[test]
fn signal_handlers_allocate_on_several_threads() {
    let case = Case::new("signal_threads", &c("signal_threads"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(
        bare.stdout_str(),
        "signals 20000 every thread handled some\n"
    );
    for report in case.reports() {
        let p = process_by_exe(&report, "signal_threads");
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert_eq!(p["end"], "exit", "{}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["signal_main_leak", "on_usr1"]),
            expected(&[("signal_main_leak", 3000, 1)]),
            "{}",
            dump(p)
        );
    }
}

/// Asking for, ignoring and blocking the signals the shim may catch answers and behaves as bare.
#[test]
fn signal_queries_ignores_and_blocks_answer_as_bare() {
    let case = Case::new("sigquery", &c("sigquery"), &[] as &[&str]);
    let bare = case.all();
    let want: String = [
        "Segmentation fault",
        "Bus error",
        "Floating point exception",
        "Illegal instruction",
        "Aborted",
        "Terminated",
        "Interrupt",
        "Hangup",
    ]
    .iter()
    .map(|s| format!("{s} default flags 0\n"))
    .chain(["ignored SIGTERM\n".into(), "pending SIGINT\n".into()])
    .collect();
    assert_eq!(bare.stdout_str(), want);
    case.assert_leaks("sigquery", &["query_leak"], &[("query_leak", 88, 1)]);
}
