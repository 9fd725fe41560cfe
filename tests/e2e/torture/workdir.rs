//! The program's working directory is its own: a relative `MEMSHIM_OUTPUT` names the directory it
//! named when the program started, whatever the program (or its forked child) changed into since.
use std::path::Path;

use super::build::c;
use super::harness::{assert_same, leaks_by_function, Case, Via};
use crate::report::*;

#[test]
fn relative_output_directory_and_chdir() {
    let case = Case::new("chdir_relative", &c("chdir_relative"), &[] as &[&str]);
    let bare = case.bare();
    assert_eq!(bare.stdout_str(), "work holds 0 entries\n");
    std::fs::remove_dir_all(case.dir.path("work")).expect("remove the bare run's work directory");
    let traced = case.preload_into(Path::new("traces"));
    assert_same(&bare, &traced, Via::Preload);
    let report = report_json(&case.run_traces());
    let procs = processes_by_exe(&report, "chdir_relative");
    assert_eq!(procs.len(), 2, "parent and child:\n{}", summary(&report));
    let funcs = ["parent_leak", "child_leak"];
    for p in procs {
        let want = if p["forked"] == true {
            ("child_leak", 200, 1)
        } else {
            ("parent_leak", 100, 1)
        };
        assert_eq!(
            leaks_by_function(p, &funcs),
            expected(&[want]),
            "{}",
            dump(p)
        );
    }
}
