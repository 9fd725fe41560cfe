//! Tests named after the bugs they pin: each failed once, in the way its comment tells, and must never
//! fail that way again.
//!
//! # Safety
//! `kill` is a plain system call with no memory-safety preconditions.
#![allow(unsafe_code)]
use crate::report::*;
use crate::util::*;

const NO_ARGS: [&str; 0] = [];

/// PyTorch died of a stack overflow under the shim on the H200 machine (glibc 2.39):
/// loading libraries with TLS made glibc's `__tls_get_addr` grow the DTV with `malloc`, and the guard
/// then lived in dynamic TLS and recursed. glibc 2.36 (this CI machine) grows the DTV without the
/// interposed malloc, so here this only checks that many TLS libraries load and are traced;
/// `scripts/h200/validate.sh` runs the same program on glibc 2.39.
#[test]
fn dlopen_of_many_tls_libraries_does_not_recurse_in_malloc() {
    let dir = TestDir::new("dlopen_of_many_tls_libraries_does_not_recurse_in_malloc");
    let libs: Vec<String> = (0..40)
        .map(|i| {
            let name = format!("libtls{i}.so");
            dir.compile_with(
                "libtls.c",
                &name,
                &["-shared", "-fPIC", "-g", &format!("-DTLS_ID={i}")],
            );
            dir.path(&name).to_string_lossy().into_owned()
        })
        .collect();
    let prog = dir.compile_with(
        "dlopen_tls.c",
        "dlopen_tls",
        &["-g", "-O0", "-ldl", "-pthread"],
    );
    let (out, report) = traced(&dir, &prog, &libs);
    assert_eq!(out.stdout_str(), "loaded 40\n", "{}", out.describe());
    let p = process_by_exe(&report, "dlopen_tls");
    assert_eq!(p["truncated"], false, "{}", dump(p));
    assert_eq!(
        user_summary(p, "host", &["leak_after_load"]),
        expected(&[("leak_after_load", 1000, 1)])
    );
}

/// The perf counters' descriptors were not close-on-exec, so every exec'd program
/// inherited them on top of its own (a chain of execs gathered more at each step).
#[test]
fn exec_chains_inherit_none_of_the_shims_descriptors() {
    let dir = TestDir::new("exec_chains_inherit_none_of_the_shims_descriptors");
    let prog = dir.compile("count_fds.c");
    let bare = run_bare(&dir.root, &prog, &NO_ARGS);
    let mut sh = String::new();
    // Three execs deep: sh -> sh -> count_fds, each traced.
    sh.push_str(&format!("exec sh -c 'exec {}'", prog.display()));
    let out = memshim_run(&dir, std::path::Path::new("/bin/sh"), &["-c", &sh]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let open = |s: &str| -> i64 {
        s.trim()
            .strip_prefix("fds ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected output {s}"))
    };
    let traced = open(&out.stdout_str());
    let untraced = open(&bare.stdout_str());
    // The traced program has its own trace file and counters, but nothing from its ancestors.
    assert!(
        traced - untraced <= 10,
        "{traced} fds traced vs {untraced} bare"
    );
    assert!(
        trace_files(&dir.traces()).len() >= 2,
        "each exec'd program is traced"
    );
}

/// A library that computes quietly and then allocates heavily while dlopen holds the loader's lock
/// (as PyTorch's do on import) must not deadlock the traced program: the writer must never wait on
/// that lock. This hung forever when the quiet writer parked on the channel.
#[test]
fn allocating_under_the_loaders_lock_after_a_quiet_spell_never_deadlocks() {
    let dir = TestDir::new("allocating_under_the_loaders_lock");
    let lib = dir.compile_with(
        "libslowinit.c",
        "libslowinit.so",
        &["-shared", "-fPIC", "-g", "-O0"],
    );
    let prog = dir.compile_with("dlopen_busy.c", "dlopen_busy", &["-g", "-O0", "-ldl"]);
    use std::os::unix::process::CommandExt;
    // A group of its own, so that a deadlocked program is killed with memshim and holds no pipe of
    // the test harness open.
    let mut child = memshim_cmd()
        .args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(&prog)
        .arg(&lib)
        .env("MEMSHIM_SYMBOL_CACHE", "off")
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("memshim runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            // SAFETY: kill has no memory-safety preconditions; the group is the one made above.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("the traced program did not finish within 60 s: deadlocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    let report = report_json(&dir.traces());
    let p = process_by_exe(&report, "dlopen_busy");
    assert_eq!(p["truncated"], false, "{}", dump(p));
    let allocations = p["heap"]["allocations"].as_u64().expect("allocations");
    assert!(allocations >= 500_000, "{allocations}");
    assert!(
        user_sites(p, "host", &["slow_init"]).is_empty(),
        "{}",
        dump(p)
    );
}
