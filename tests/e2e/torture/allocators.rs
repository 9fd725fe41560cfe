//! Programs with an allocator of their own: linked with jemalloc or tcmalloc, or with one preloaded
//! before or after the shim. Where the shim sees the allocations they must be exact; where it cannot
//! (an allocator that wins the symbol lookup), the report must say why instead of "0 allocations".
use std::path::{Path, PathBuf};

use super::build::{c, program};
use super::harness::{leaks_by_function, Case};
use crate::report::*;

const NO_ARGS: [&str; 0] = [];
const FUNCS: [&str; 2] = ["worker_leak", "main_leak"];
const LEAKS: [(&str, u64, u64); 2] = [("worker_leak", 1000, 4), ("main_leak", 2000, 1)];

/// The allocator's shared library, or None (and a printed reason) when its package (which also gives
/// the `lib*.so` link that `-l` needs) is missing.
fn allocator(lib: &str, package: &str) -> Option<PathBuf> {
    let dir = Path::new("/usr/lib/x86_64-linux-gnu");
    let path = dir.join(lib);
    let link = dir.join(
        lib.split_once(".so")
            .map_or(lib, |(stem, _)| stem)
            .to_string()
            + ".so",
    );
    if path.is_file() && link.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped: {} is missing (apt package {package})",
            path.display()
        );
        None
    }
}

fn linked(name: &str, lib: &str, package: &str, flag: &str) {
    if allocator(lib, package).is_none() {
        return;
    }
    let prog = program(
        "alloc_threads.c",
        &format!("alloc_threads_{name}"),
        &["-g", "-O0", "-pthread", flag],
    );
    let case = Case::new(&format!("linked_{name}"), &prog, &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "workers 4\n");
    case.assert_leaks(&format!("alloc_threads_{name}"), &FUNCS, &LEAKS);
}

#[test]
fn linked_with_jemalloc() {
    linked(
        "jemalloc",
        "libjemalloc.so.2",
        "libjemalloc-dev",
        "-ljemalloc",
    );
}

#[test]
fn linked_with_tcmalloc() {
    linked(
        "tcmalloc",
        "libtcmalloc.so.4",
        "libgoogle-perftools-dev",
        "-ltcmalloc",
    );
}

/// Preloaded after the shim (`LD_PRELOAD=lib memshim run`, the shim goes first): the shim's malloc
/// is the one called and the allocator is its "real" one.
fn preloaded_after(name: &str, lib: &str, package: &str) {
    let Some(lib) = allocator(lib, package) else {
        return;
    };
    let case =
        Case::new(&format!("after_{name}"), &c("alloc_threads"), &NO_ARGS).env("LD_PRELOAD", &lib);
    let bare = case.bare();
    let run = case.run();
    super::harness::assert_same(&bare, &run, super::harness::Via::Run);
    let report = report_json(&case.run_traces());
    let p = process_by_exe(&report, "alloc_threads");
    assert_eq!(
        leaks_by_function(p, &FUNCS),
        expected(&LEAKS),
        "{}",
        dump(p)
    );
}

#[test]
fn jemalloc_preloaded_after_the_shim() {
    preloaded_after("jemalloc", "libjemalloc.so.2", "libjemalloc-dev");
}

#[test]
fn tcmalloc_preloaded_after_the_shim() {
    preloaded_after("tcmalloc", "libtcmalloc.so.4", "libgoogle-perftools-dev");
}

/// Preloaded before the shim: the allocator's malloc wins the lookup. The program must run as bare;
/// the report must have the leaks, or a note saying the allocations could not be seen.
fn preloaded_before(name: &str, lib: &str, package: &str) {
    let Some(lib) = allocator(lib, package) else {
        return;
    };
    let case =
        Case::new(&format!("before_{name}"), &c("alloc_threads"), &NO_ARGS).preload_before(&lib);
    let bare = case.bare();
    let preload = case.preload();
    super::harness::assert_same(&bare, &preload, super::harness::Via::Preload);
    let report = report_json(&case.preload_traces());
    let p = process_by_exe(&report, "alloc_threads");
    let leaks = leaks_by_function(p, &FUNCS);
    let noted = p["notes"].as_array().is_some_and(|notes| {
        notes.iter().any(|n| {
            n.as_str()
                .is_some_and(|n| n.contains("malloc") || n.contains(name))
        })
    });
    assert!(
        leaks == expected(&LEAKS) || (leaks.is_empty() && noted),
        "{name} before the shim: neither the exact leaks nor a note saying why they are missing:\n{}\nnotes: {}",
        dump(p),
        p["notes"]
    );
}

#[test]
fn jemalloc_preloaded_before_the_shim() {
    preloaded_before("jemalloc", "libjemalloc.so.2", "libjemalloc-dev");
}

#[test]
fn tcmalloc_preloaded_before_the_shim() {
    preloaded_before("tcmalloc", "libtcmalloc.so.4", "libgoogle-perftools-dev");
}
