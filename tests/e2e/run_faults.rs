//! `memshim run` when things go wrong around the program: signals sent to memshim, a static
//! executable, the output directory removed during the run, a program whose allocations never reach
//! the shim. The program's own exit status always comes back.
//!
//! # Safety
//! `kill` is a plain system call with no memory-safety preconditions.
#![allow(unsafe_code)]
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::hostile::{json_report, notes};
use crate::util::*;

const NO_ARGS: [&str; 0] = [];

/// A program that prints its pid, then waits for signals; SIGTERM and SIGINT end it by default.
const WAITER: &str = r#"#include <stdio.h>
#include <unistd.h>
int main(void) { printf("%d\n", (int)getpid()); fflush(stdout); for (;;) pause(); }
"#;

fn compile_source(dir: &TestDir, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.path(&format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.path(name);
    let status = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(status.success(), "cc {name}.c");
    out
}

#[test]
fn signals_sent_to_memshim_run_reach_the_command_and_its_status_is_kept() {
    let dir = TestDir::new("hostile_signals");
    let prog = compile_source(&dir, "waiter", WAITER, &["-O1"]);
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGHUP, "HUP"),
    ] {
        let mut child = memshim_cmd()
            .args(["run", "--quiet", "-o"])
            .arg(dir.path(&format!("traces-{name}")))
            .arg("--")
            .arg(&prog)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("memshim run starts");
        let mut line = String::new();
        let mut stdout = child.stdout.take().unwrap();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0] as char);
        }
        let pid: i32 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("a pid: {line:?}"));
        // SAFETY: sends a signal to the memshim process this test started.
        unsafe { libc::kill(child.id() as i32, sig) };
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "SIG{name}: memshim run did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            status.code(),
            Some(128 + sig),
            "SIG{name}: memshim leaves with the command's status"
        );
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "SIG{name}: the command {pid} is still running"
        );
    }
}

#[test]
fn a_static_executable_is_run_and_said_to_be_untraceable() {
    let dir = TestDir::new("hostile_static");
    let src = "#include <stdio.h>\nint main(void) { puts(\"static ran\"); return 7; }\n";
    let prog = compile_source(&dir, "static_prog", src, &["-static", "-O1"]);
    let mut cmd = memshim_cmd();
    cmd.args(["run", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(&prog);
    let output = cmd.env("MEMSHIM_SYMBOL_CACHE", "off").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(7), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "static ran\n");
    let plain = format!(
        "memshim: {} is a static executable (it has no ELF interpreter), so the shim cannot be loaded into it and it cannot be traced; running it untraced",
        prog.display()
    );
    assert!(stderr.contains(&plain), "{stderr}");
    assert!(
        stderr.contains(
            "wrote no trace: it is a static executable, which the shim cannot be loaded into"
        ),
        "{stderr}"
    );
}

#[test]
fn a_removed_output_directory_leaves_the_exit_status_alone() {
    let dir = TestDir::new("hostile_removed_output");
    for code in [0, 5] {
        let mut cmd = memshim_cmd();
        cmd.args(["run", "--quiet", "-o"])
            .arg(dir.path(&format!("gone-{code}")))
            .args([
                "--",
                "sh",
                "-c",
                &format!("rm -rf \"$MEMSHIM_OUTPUT\"; exit {code}"),
            ]);
        let output = cmd.env("MEMSHIM_SYMBOL_CACHE", "off").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains("the output directory was removed or made unreadable during the run, so this run's traces are lost"),
            "{stderr}"
        );
    }
}

#[test]
fn a_program_whose_allocations_never_reach_the_shim_gets_a_reason_not_a_bare_zero() {
    let dir = TestDir::new("hostile_no_malloc");
    // Memory from mmap only, as a program with an allocator of its own gets it.
    let own = "#include <sys/mman.h>\nint main(void) { char *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); p[0] = 1; return p[0] == 1 ? 4 : 1; }\n";
    let prog = compile_source(&dir, "own_allocator", own, &["-O0"]);
    let out = memshim_run(&dir, &prog, &NO_ARGS);
    assert_eq!(out.status.code(), Some(4), "{}", out.describe());
    let report = json_report(&dir.traces());
    let p = &report["processes"][0];
    assert_eq!(p["heap"]["allocations"], 0);
    assert!(
        notes(p).contains(&"no malloc call reached the shim: the program allocates nothing on the heap, or uses an allocator of its own (statically linked, or one that never calls libc's malloc)".to_string()),
        "{:?}",
        notes(p)
    );
    // Nothing recorded at all: `memshim run` says so about the trace.
    let nothing = compile_source(&dir, "nothing", "int main(void) { return 0; }\n", &["-O1"]);
    let mut cmd = memshim_cmd();
    cmd.args(["run", "-o"])
        .arg(dir.path("traces-nothing"))
        .arg("--")
        .arg(&nothing);
    let out = run_ok(&mut cmd);
    let trace = trace_files(&dir.path("traces-nothing"));
    assert_eq!(trace.len(), 1);
    assert!(
        out.stderr_str().contains(&format!(
            "memshim: note: {}: no allocation reached the shim: the program allocates nothing, or uses its own allocator (its malloc calls never reach libc's)",
            trace[0].display()
        )),
        "{}",
        out.describe()
    );
}
