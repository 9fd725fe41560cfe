//! Other language runtimes under the shim: a Rust program (built here with rustc), `memshim` itself,
//! and the JVM where one is installed.
use std::path::Path;

use super::build::program;
use super::harness::{leaks_by_function, Case};
use crate::report::*;
use serde_json::Value;

#[test]
fn rust_program_with_threads() {
    let prog = program(
        "rust_threads.rs",
        "rust_threads",
        &["-g", "-C", "opt-level=0", "--edition", "2021"],
    );
    let case = Case::new("rust_threads", &prog, &[] as &[&str]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "rust threads 8 total 391120\n");
    case.assert_leaks("rust_threads", &["rust_leak"], &[("rust_leak", 777, 1)]);
}

/// A Go program with cgo: output and status as bare, its C leak exact, and the Go runtime's heap
/// and stacks (mappings it keeps until exit, most of them only reserved) not called a leak.
#[test]
fn go_program_calling_c() {
    let prog = super::build::go("go_cgo");
    let case = Case::new("go_cgo", &prog, &[] as &[&str]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "go total 160000\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "go_cgo");
        // No destructor of the C library runs when Go exits: the trace has no end.
        assert_eq!(p["end"], Value::Null, "{}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["leak"]),
            vec![("leak".to_string(), 123, 1)],
            "{}",
            dump(p)
        );
        let mmap = &p["leaks"]["mmap"];
        assert!(mmap["bytes"].as_u64() > Some(0), "{}", dump(p));
        assert_eq!(mmap["bytes"], mmap["by_design_bytes"], "{}", dump(p));
        let verdict = report["verdict"].to_string();
        assert!(!verdict.contains("mapping_leak"), "{verdict}");
    }
}

#[test]
fn memshim_itself_under_the_shim() {
    let memshim = &crate::util::artifacts().memshim;
    let case = Case::new("memshim_version", memshim, &["--version"]);
    let bare = case.all();
    assert!(
        bare.stdout_str().starts_with("memshim "),
        "{}",
        bare.describe()
    );
    complete_trace(&case, "memshim");
}

/// The traced runs left one complete trace of `exe` each.
fn complete_trace(case: &Case, exe: &str) {
    for report in case.reports() {
        let p = process_by_exe(&report, exe);
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert_eq!(p["end"], "exit", "{}", dump(p));
    }
}

#[test]
fn jvm_version() {
    let java = ["/usr/bin/java", "/usr/local/bin/java"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file());
    let Some(java) = java else {
        eprintln!("skipped: no java in /usr/bin or /usr/local/bin");
        return;
    };
    let case = Case::new("jvm_version", java, &["-version"]);
    let bare = case.all();
    assert!(bare.stderr_str().contains("version"), "{}", bare.describe());
}
