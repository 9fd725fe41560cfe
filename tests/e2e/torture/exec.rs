//! exec: each call of the `exec` family, and a chain of execs.
use super::build::c;
use super::harness::{leaks_by_function, Case};
use crate::report::*;

/// `exec_family CALL alloc_many`: the image before the exec keeps its leak and ends in "exec"; the
/// new image is traced with its own.
fn exec_call(call: &str) {
    let target = c("alloc_many");
    let case = Case::new(
        &format!("exec_{call}"),
        &c("exec_family"),
        &[call, target.to_str().expect("utf-8 path")],
    );
    let bare = case.all();
    assert_eq!(bare.stdout_str(), format!("exec {call}\nalloc_many 2\n"));
    let funcs = ["before_exec", "target_leak"];
    for report in case.reports() {
        let before = process_by_exe(&report, "exec_family");
        assert_eq!(
            before["end"],
            "exec",
            "{}\nnotes: {}",
            dump(before),
            before["notes"]
        );
        assert_eq!(before["truncated"], false, "{}", dump(before));
        assert_eq!(
            leaks_by_function(before, &funcs),
            expected(&[("before_exec", 333, 1)]),
            "{}",
            dump(before)
        );
        let after = process_by_exe(&report, "alloc_many");
        assert_eq!(after["pid"], before["pid"], "exec keeps the pid");
        assert_eq!(after["end"], "exit", "{}", dump(after));
        assert_eq!(
            leaks_by_function(after, &funcs),
            expected(&[("target_leak", 444, 1)]),
            "{}",
            dump(after)
        );
    }
}

#[test]
fn exec_with_execl() {
    exec_call("execl");
}

#[test]
fn exec_with_execlp() {
    exec_call("execlp");
}

#[test]
fn exec_with_execle() {
    exec_call("execle");
}

#[test]
fn exec_with_execv() {
    exec_call("execv");
}

#[test]
fn exec_with_execvp() {
    exec_call("execvp");
}

#[test]
fn exec_with_execve() {
    exec_call("execve");
}

#[test]
fn exec_with_execveat() {
    exec_call("execveat");
}

#[test]
fn a_chain_of_six_execs() {
    let case = Case::new("exec_chain", &c("exec_chain"), &["5"]);
    let bare = case.all();
    assert_eq!(
        bare.stdout_str(),
        "step 5\nstep 4\nstep 3\nstep 2\nstep 1\nstep 0\n"
    );
    for report in case.reports() {
        let images = processes_by_exe(&report, "exec_chain");
        assert_eq!(images.len(), 6, "{}", summary(&report));
        for (i, p) in images.iter().enumerate() {
            let end = if i == 5 { "exit" } else { "exec" };
            assert_eq!(p["end"], end, "image {i}: {}", dump(p));
            assert_eq!(p["pid"], images[0]["pid"], "exec keeps the pid");
            assert_eq!(
                leaks_by_function(p, &["step_leak"]),
                expected(&[("step_leak", 100, 1)]),
                "image {i}: {}",
                dump(p)
            );
        }
    }
}

#[test]
fn exec_from_a_thread_while_others_allocate() {
    let target = c("alloc_many");
    let case = Case::new(
        "exec_from_thread",
        &c("exec_from_thread"),
        &[target.to_str().expect("utf-8 path")],
    );
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "exec from a thread\nalloc_many 1\n");
    let funcs = ["before_exec", "target_leak"];
    for report in case.reports() {
        let before = process_by_exe(&report, "exec_from_thread");
        assert_eq!(before["end"], "exec", "{}", dump(before));
        assert_eq!(before["truncated"], false, "{}", dump(before));
        assert_eq!(
            leaks_by_function(before, &funcs),
            expected(&[("before_exec", 333, 1)]),
            "{}",
            dump(before)
        );
        let after = process_by_exe(&report, "alloc_many");
        assert_eq!(after["pid"], before["pid"], "exec keeps the pid");
        assert_eq!(
            leaks_by_function(after, &funcs),
            expected(&[("target_leak", 444, 1)]),
            "{}",
            dump(after)
        );
    }
}

/// Failed execs leave the process running: it is traced on, in one trace, to its normal end.
#[test]
fn failed_execs_of_every_kind() {
    let case = Case::new("exec_fail", &c("exec_fail"), &[] as &[&str]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "failed 7\n");
    case.assert_leaks(
        "exec_fail",
        &["before_exec", "after_exec"],
        &[("after_exec", 200, 1), ("before_exec", 100, 1)],
    );
    for (report, dir) in case
        .reports()
        .iter()
        .zip([case.run_traces(), case.preload_traces()])
    {
        assert_eq!(
            processes_by_exe(report, "exec_fail").len(),
            1,
            "one process, one trace: {}",
            summary(report)
        );
        let files = std::fs::read_dir(&dir).expect("traces").count();
        assert_eq!(files, 1, "one trace file in {}", dir.display());
        let p = process_by_exe(report, "exec_fail");
        assert_eq!(p["end"], "exit", "{}", dump(p));
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert!(
            !p["notes"].to_string().contains("missing"),
            "no frame is missing: {}",
            p["notes"]
        );
        assert_eq!(
            p["heap"]["allocations"].as_u64().map(|n| n >= 10002),
            Some(true)
        );
    }
}
