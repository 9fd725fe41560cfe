//! A program that owns every descriptor: it closes them all and opens its own, or dup2s its own file
//! over all of them. The shim must neither close nor write into the program's descriptors.
use super::build::c;
use super::harness::Case;
use crate::report::processes_by_exe;
use serde_json::Value;

const NO_ARGS: [&str; 0] = [];

/// `close_all HOW`: the program's 8 new descriptors stay its own, and the leak after them is seen;
/// the report says the fast unwinder was given up.
fn close_all(how: &str) {
    let case = Case::new(&format!("close_all_{how}"), &c("close_all"), &[how]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "fds 3 4 5 6 7 8 9 10\nfiles ok 8\n");
    case.assert_leaks(
        "close_all",
        &["after_close_leak"],
        &[("after_close_leak", 1000, 1)],
    );
    for report in case.reports() {
        assert_eq!(
            unwinder_notes(&report, "close_all"),
            usize::from(libunwind_in_use()),
            "{report:#}"
        );
    }
}

/// The notes of process `exe` that say libunwind was given up.
fn unwinder_notes(report: &Value, exe: &str) -> usize {
    let procs = processes_by_exe(report, exe);
    assert_eq!(procs.len(), 1, "{report:#}");
    procs[0]["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter(|n| {
            n.as_str()
                .is_some_and(|t| t.contains("fast unwinder (libunwind)"))
        })
        .count()
}

/// Whether the shim unwinds with libunwind in these runs: the system has it and the suite is not
/// the pass with libgcc's unwinder (`MEMSHIM_UNWIND=gcc`, see `.ci/run`).
fn libunwind_in_use() -> bool {
    let listed = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libunwind.so.8 "));
    listed && std::env::var("MEMSHIM_UNWIND").as_deref() != Ok("gcc")
}

/// `vfork_close HOW`: children that close every descriptor before exec (Python's `subprocess`,
/// `posix_spawn` with a closefrom action) have descriptor tables of their own. The parent's
/// descriptors stay as they were (the shim's trace among them: none reopened, none leaked), and
/// libunwind is kept.
fn vfork_close(how: &str) {
    let case = Case::new(&format!("vfork_close_{how}"), &c("vfork_close"), &[how]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "children 6 ok 6\nfds steady\n");
    case.assert_leaks(
        "vfork_close",
        &["after_children_leak"],
        &[("after_children_leak", 777, 1)],
    );
    for report in case.reports() {
        assert_eq!(unwinder_notes(&report, "vfork_close"), 0, "{report:#}");
    }
}

#[test]
fn vfork_children_that_close_every_descriptor_release_none_of_the_parents() {
    vfork_close("vfork");
}

#[test]
fn posix_spawn_children_that_close_every_descriptor_release_none_of_the_parents() {
    vfork_close("spawn");
}

#[test]
fn closes_every_descriptor_and_opens_its_own() {
    close_all("loop");
}

#[test]
fn closefrom_and_opens_its_own() {
    close_all("closefrom");
}

#[test]
fn close_range_syscall_and_opens_its_own() {
    close_all("close_range");
}

#[test]
fn dup2s_its_own_file_over_every_descriptor() {
    let case = Case::new("dup2_all", &c("dup2_all"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "data 6 ok\n");
    let data = std::fs::read(case.dir.path("data")).expect("the program's data file");
    assert_eq!(data, b"hello\n", "the program's file after the traced runs");
    case.assert_leaks(
        "dup2_all",
        &["after_dup_leak"],
        &[("after_dup_leak", 1000, 1)],
    );
}
