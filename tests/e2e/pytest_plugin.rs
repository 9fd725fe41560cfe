//! `pytest --memshim` (the plugin in `python/memshim/`): a test over its limit fails, naming the
//! Python line that allocated the most and the exact figure; a test within it passes.
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// `python3 -m pytest -q ARGS test_limits.py` in a test directory holding the bundled limit tests,
/// with the plugin from `python/` and this build's CLI.
fn pytest(test: &str, args: &[&str]) -> (TestDir, Outcome) {
    let dir = TestDir::new(test);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::copy(
        root.join("examples/python/pytest/test_limits.py"),
        dir.path("test_limits.py"),
    )
    .expect("copy the tests");
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(["-p", "memshim.pytest_plugin"])
        .args(args)
        .arg("test_limits.py")
        .env("PYTHONPATH", root.join("python"))
        .env("MEMSHIM_CLI", &artifacts().memshim)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&dir.root);
    let out = run_command(&mut cmd);
    (dir, out)
}

#[test]
fn a_test_over_its_limit_fails_with_the_line_that_broke_it() {
    let traces = std::env::temp_dir().join("memshim-e2e/pytest_plugin_limits/traces");
    let (dir, out) = pytest(
        "pytest_plugin_limits",
        &["--memshim", "--memshim-dir", traces.to_str().unwrap()],
    );
    // pytest's status for failed tests.
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let text = out.stdout_str();
    for line in [
        "memshim: limit_memory(24.0 MiB) broken: 30.0 MiB heap peak, 6.0 MiB over; the most from load_blob test_limits.py:13 (30.0 MiB)",
        "memshim: limit_leaks(1.0 MiB) broken: 2.0 MiB left allocated at the end, 1.0 MiB over; the most from keep test_limits.py:17 (2.0 MiB)",
        "FAILED test_limits.py::test_over_its_peak",
        "FAILED test_limits.py::test_that_leaks",
        "2 failed, 2 passed",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{}", out.describe());
    }
    // The run's traces are kept where asked.
    assert_eq!(traces, dir.traces());
    assert!(!trace_files(&dir.traces()).is_empty());
}

#[test]
fn without_the_flag_the_markers_change_nothing() {
    let (_dir, out) = pytest("pytest_plugin_off", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert!(out.stdout_str().contains("4 passed"), "{}", out.describe());
}
