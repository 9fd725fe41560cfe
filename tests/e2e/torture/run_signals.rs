//! `memshim run` itself: SIGTERM, SIGINT and SIGHUP sent to it reach the traced command (which must
//! not be left running) and it exits with the command's status; a static binary, which no preloaded
//! library can enter, is named as such.
//!
//! # Safety
//! `kill` is a plain system call with no memory-safety preconditions; the command's pre-exec hook
//! calls only `signal`, which is async-signal-safe.
#![allow(unsafe_code)]

use std::process::Command;
use std::time::{Duration, Instant};

use super::build::{c, program, test_dir};
use super::deadline::{self, Spawned};
use crate::util::*;

/// Starts `memshim run -- sleeper`, waits for the sleeper's pid, sends `sig` to memshim only.
fn signal_memshim_run(name: &str, sig: i32) {
    let dir = test_dir(&format!("run_{name}"));
    let mut cmd = memshim_cmd();
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(c("sleeper"))
        .current_dir(&dir.root);
    // A test runner started in the background by a shell without job control has SIGINT and
    // SIGQUIT ignored, and the ignoring is inherited: the command would shrug the signal off.
    // SAFETY: only `signal`, async-signal-safe, runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let spawned = Spawned::start(&mut cmd, &dir.root, "run");
    let until = Instant::now() + Duration::from_secs(20);
    let child: i32 = loop {
        let out = spawned.stdout_so_far();
        if let Some(pid) = out.strip_prefix("pid ").and_then(|r| r.strip_suffix('\n')) {
            break pid.parse().expect("the sleeper's pid");
        }
        assert!(Instant::now() < until, "the sleeper did not start: {out:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    // SAFETY: see the module's safety note; the pid is memshim's, which has not been waited for.
    unsafe { libc::kill(spawned.pid(), sig) };
    // The suite's deadline, not a shorter one: after the command dies memshim run still names its
    // frames (the symbol cache is off in tests), which took over 10 s once on a loaded CI machine.
    let ran = spawned.wait(deadline::DEADLINE);
    assert!(
        !ran.leftover.contains(&child),
        "the traced sleeper (pid {child}) was left running after memshim run got signal {sig}: {}",
        ran.describe()
    );
    assert_eq!(
        ran.status.code(),
        Some(128 + sig),
        "memshim run's status after signal {sig}: {}",
        ran.describe()
    );
}

#[test]
fn sigterm_to_memshim_run_reaches_the_command() {
    signal_memshim_run("sigterm", libc::SIGTERM);
}

#[test]
fn sigint_to_memshim_run_reaches_the_command() {
    signal_memshim_run("sigint", libc::SIGINT);
}

#[test]
fn sighup_to_memshim_run_reaches_the_command() {
    signal_memshim_run("sighup", libc::SIGHUP);
}

#[test]
fn static_binary_is_named_as_untraceable() {
    if !std::path::Path::new("/usr/lib/x86_64-linux-gnu/libc.a").is_file() {
        eprintln!("skipped: no static libc (apt package libc6-dev)");
        return;
    }
    // Named so that no path says "static" but memshim's own words.
    let prog = program("static_hello.c", "hello_alone", &["-static", "-g", "-O0"]);
    let dir = test_dir("hello_alone");
    let bare = deadline::run(
        Command::new(&prog).current_dir(&dir.root),
        &dir.root,
        "bare",
    );
    assert_eq!(bare.stdout_str(), "static hello\n");
    let mut cmd = memshim_cmd();
    cmd.args(["run", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(&prog)
        .current_dir(&dir.root);
    let run = deadline::run(&mut cmd, &dir.root, "run");
    assert_eq!(run.stdout, bare.stdout, "{}", run.describe());
    assert_eq!(run.status.code(), Some(0), "{}", run.describe());
    let err = run.stderr_str();
    assert!(
        err.lines()
            .any(|l| l.starts_with("memshim: ") && l.contains("static") && l.contains("trace")),
        "memshim run should say the static binary cannot be traced: {}",
        run.describe()
    );
}
