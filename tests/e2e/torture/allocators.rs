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

/// An executable that takes `malloc`'s and `free`'s addresses defines both in its dynamic symbol
/// table (canonical PLT entries that only jump on to the real definitions), as Ubuntu's python3.12
/// does for `malloc`. It is not an allocator ahead of the shim: taking it for one made the shim call
/// the executable's entry, which jumps back into the shim, and every such process crashed at its
/// first allocation (found on the H200). Its heap must be traced, exactly.
#[test]
fn an_executable_exporting_malloc_from_its_plt_is_traced() {
    let prog = program(
        "plt_malloc.c",
        "plt_malloc",
        &["-g", "-O0", "-fno-pie", "-no-pie"],
    );
    let dynsyms = std::process::Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(&prog)
        .output()
        .expect("readelf runs");
    let dynsyms = String::from_utf8_lossy(&dynsyms.stdout);
    for name in ["malloc", "free"] {
        let exported = dynsyms.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 8
                && f[7].split('@').next() == Some(name)
                && f[6] == "UND"
                && u64::from_str_radix(f[1], 16).is_ok_and(|v| v != 0)
        });
        assert!(
            exported,
            "the executable defines {name} (a canonical PLT entry, undefined with an address):\n{dynsyms}"
        );
    }
    let case = Case::new("plt_malloc", &prog, &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "same 1\n");
    case.assert_leaks(
        "plt_malloc",
        &["plt_leak", "direct_leak"],
        &[("direct_leak", 99, 1), ("plt_leak", 4321, 1)],
    );
    for report in case.reports() {
        let p = process_by_exe(&report, "plt_malloc");
        assert!(
            p["heap"]["allocations"].as_u64().is_some_and(|n| n >= 1002),
            "the 1000 pairs are traced: {}",
            dump(p)
        );
    }
}
