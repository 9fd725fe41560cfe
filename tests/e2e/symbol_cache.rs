//! The on-disk cache of names (`MEMSHIM_SYMBOL_CACHE`): `memshim run` fills it, files are private,
//! and the next run of the same binary takes its names from it instead of reading DWARF again.
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::report::*;
use crate::util::*;

fn run_with_cache(dir: &TestDir, prog: &std::path::Path, traces: &str, cache: &std::path::Path) {
    let mut cmd = Command::new(&artifacts().memshim);
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.path(traces))
        .arg("--")
        .arg(prog)
        .env("MEMSHIM_SYMBOL_CACHE", cache)
        .current_dir(&dir.root);
    run_ok(&mut cmd);
}

#[test]
fn a_second_run_takes_its_names_from_the_cache() {
    let dir = TestDir::new("symbol_cache_second_run");
    let prog = dir.compile("leaky.c");
    let cache = dir.path("symcache");
    run_with_cache(&dir, &prog, "t1", &cache);
    let first = report_json(&dir.path("t1"));
    site_with(process_by_exe(&first, "leaky"), "host", "leak_malloc");

    let files: Vec<_> = std::fs::read_dir(&cache)
        .expect("the cache directory exists")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert!(!files.is_empty());
    let mut marked = 0;
    for f in &files {
        let mode = std::fs::metadata(f).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", f.display());
        // Rename the function in the cache: a second run that shows the new name took it from here.
        let text = std::fs::read_to_string(f).expect("a cache file");
        if text.contains("\"leak_malloc\"") {
            std::fs::write(
                f,
                text.replace("\"leak_malloc\"", "\"leak_malloc_from_cache\""),
            )
            .expect("rewrite");
            marked += 1;
        }
    }
    assert_eq!(marked, 1, "one binary named leak_malloc");

    run_with_cache(&dir, &prog, "t2", &cache);
    let second = report_json(&dir.path("t2"));
    site_with(
        process_by_exe(&second, "leaky"),
        "host",
        "leak_malloc_from_cache",
    );
}

#[test]
fn the_processes_of_one_run_share_the_cache() {
    let dir = TestDir::new("symbol_cache_shared");
    let prog = dir.compile("fork.c");
    let cache = dir.path("symcache");
    run_with_cache(&dir, &prog, "t", &cache);
    let report = report_json(&dir.path("t"));
    let procs = processes_by_exe(&report, "fork");
    assert_eq!(procs.len(), 2, "{}", dump(&report));
    // The child's trace is named from what the parent's added to the cache, kept between the two.
    let named: Vec<&str> = ["parent_leak", "child_leak"]
        .into_iter()
        .filter(|f| {
            procs
                .iter()
                .any(|p| sites(p, "host").iter().any(|s| frame_index(s, f).is_some()))
        })
        .collect();
    assert_eq!(named, ["parent_leak", "child_leak"]);
    let texts: Vec<String> = std::fs::read_dir(&cache)
        .expect("the cache directory exists")
        .map(|e| std::fs::read_to_string(e.expect("an entry").path()).expect("a cache file"))
        .collect();
    let holding = |f: &str| {
        texts
            .iter()
            .filter(|t| t.contains(&format!("\"{f}\"")))
            .count()
    };
    assert_eq!(
        (holding("parent_leak"), holding("child_leak")),
        (1, 1),
        "one file for the binary, with both processes' names"
    );
}
