//! A `memshim` on its own, as `cargo install` or a wheel leaves it (no `libmemshim.so` beside it),
//! runs programs with the copy of the shim built into it, written once into the user's cache.
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::report::{process_by_exe, report_json};
use crate::util::*;

/// The test's own copy of the CLI, alone in a directory.
fn lone_cli(dir: &TestDir) -> PathBuf {
    let bin = dir.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cli = bin.join("memshim");
    std::fs::copy(&artifacts().memshim, &cli).expect("copy the CLI");
    cli
}

fn run_lone(dir: &TestDir, cli: &Path, cache: &Path, prog: &Path, args: &[&str]) -> Outcome {
    let mut cmd = std::process::Command::new(cli);
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(prog)
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("MEMSHIM_LIB")
        .current_dir(&dir.root);
    run_command(&mut cmd)
}

/// Removes the traces of a run, so the next `memshim run` may use the directory.
fn clear(dir: &TestDir) {
    for t in trace_files(&dir.traces()) {
        std::fs::remove_file(t).unwrap();
    }
}

fn cached_shims(cache: &Path) -> Vec<PathBuf> {
    let root = cache.join("memshim/shim");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.map(|e| e.unwrap().path().join("libmemshim.so")).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn a_lone_cli_traces_with_its_own_copy_of_the_shim() {
    let dir = TestDir::new("install_lone_cli");
    let cli = lone_cli(&dir);
    let cache = dir.path("cache");
    let prog = dir.compile("gate_leak.c");
    for round in 0..2 {
        let out = run_lone(&dir, &cli, &cache, &prog, &["40", "0"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            out.describe()
        );
        let r = report_json(&dir.traces());
        let p = process_by_exe(&r, "gate_leak");
        let site = p["leaks"]["host"]["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["frames"].to_string().contains("hold_buffer"))
            .expect("hold_buffer's site");
        assert_eq!(site["bytes"], 40 * 1024);
        clear(&dir);
    }
    // Written once, private, and used again by the second run.
    let shims = cached_shims(&cache);
    assert_eq!(shims.len(), 1, "{shims:?}");
    let mode = std::fs::metadata(&shims[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o500);
    let parent = std::fs::metadata(shims[0].parent().unwrap()).unwrap();
    assert_eq!(parent.permissions().mode() & 0o777, 0o700);
}

/// A lone CLI that has run one program, so its copy of the shim is in the cache: the CLI, the
/// cache, the program and the cached copy's path.
fn installed_once(dir: &TestDir) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let cli = lone_cli(dir);
    let cache = dir.path("cache");
    let prog = dir.compile("gate_leak.c");
    let out = run_lone(dir, &cli, &cache, &prog, &["1", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    clear(dir);
    let shim = cached_shims(&cache).remove(0);
    (cli, cache, prog, shim)
}

#[test]
fn a_symlink_planted_at_the_cached_copy_is_replaced_not_followed() {
    let dir = TestDir::new("install_planted_symlink");
    // Learn where the copy goes, then plant a link there to a file of the "attacker's".
    let (cli, cache, prog, shim) = installed_once(&dir);
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::remove_file(&shim).unwrap();
    let bait = dir.path("bait");
    std::fs::write(&bait, b"not a shim").unwrap();
    std::os::unix::fs::symlink(&bait, &shim).unwrap();
    let out = run_lone(&dir, &cli, &cache, &prog, &["1", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert_eq!(std::fs::read(&bait).unwrap(), b"not a shim");
    let meta = std::fs::symlink_metadata(&shim).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the link was replaced by the copy"
    );
}

#[test]
fn a_cache_directory_others_can_write_is_refused() {
    let dir = TestDir::new("install_open_cache");
    let (cli, cache, prog, shim) = installed_once(&dir);
    let shim_dir = shim.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&shim_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_lone(&dir, &cli, &cache, &prog, &["1", "0"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(
        err.contains("is not a private directory of this user") && err.contains("MEMSHIM_LIB"),
        "{err}"
    );
}
