//! One torture case: a program and its arguments, run bare, under `memshim run` and with the shim
//! preloaded by hand; the traced runs must behave exactly as the bare one.
use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::deadline::{self, Ran};
use crate::report::*;
use crate::util::*;

/// The shim library beside the `memshim` binary.
pub fn shim_lib() -> PathBuf {
    artifacts().memshim.with_file_name("libmemshim.so")
}

/// A program, its arguments and environment, and the test's own directory.
pub struct Case {
    pub dir: TestDir,
    pub prog: PathBuf,
    pub args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    /// Preloaded before the shim in the LD_PRELOAD runs (after it under `memshim run`).
    before: Vec<PathBuf>,
}

impl Case {
    pub fn new<S: AsRef<OsStr>>(name: &str, prog: &Path, args: &[S]) -> Case {
        Case {
            dir: super::build::test_dir(name),
            prog: prog.to_path_buf(),
            args: args.iter().map(|a| a.as_ref().to_os_string()).collect(),
            env: Vec::new(),
            before: Vec::new(),
        }
    }

    /// An environment variable for every run.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Case {
        self.env.push((key.into(), value.as_ref().to_os_string()));
        self
    }

    /// A library preloaded before the shim in the LD_PRELOAD run.
    pub fn preload_before(mut self, lib: &Path) -> Case {
        self.before.push(lib.to_path_buf());
        self
    }

    fn command(&self, prog: &Path) -> Command {
        let mut cmd = Command::new(prog);
        cmd.current_dir(&self.dir.root);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// The program alone.
    pub fn bare(&self) -> Ran {
        let mut cmd = self.command(&self.prog);
        cmd.args(&self.args);
        deadline::run(&mut cmd, &self.dir.root, "bare")
    }

    /// Where `memshim run` writes.
    pub fn run_traces(&self) -> PathBuf {
        self.dir.traces()
    }

    /// Where the LD_PRELOAD run writes.
    pub fn preload_traces(&self) -> PathBuf {
        self.dir.path("preload")
    }

    /// `memshim run --quiet -o traces -- prog args`.
    pub fn run(&self) -> Ran {
        let mut cmd = self.command(&artifacts().memshim);
        cmd.args(["run", "--quiet", "-o"])
            .arg(self.run_traces())
            .arg("--")
            .arg(&self.prog)
            .args(&self.args);
        if !self.before.is_empty() {
            cmd.env("LD_PRELOAD", join(&self.before));
        }
        deadline::run(&mut cmd, &self.dir.root, "run")
    }

    /// The program with `LD_PRELOAD=[before:]libmemshim.so` and `MEMSHIM_OUTPUT`, not quiet.
    pub fn preload(&self) -> Ran {
        let out = self.preload_traces();
        std::fs::create_dir_all(&out)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", out.display()));
        self.preload_into(&out)
    }

    /// As [`Case::preload`], with `MEMSHIM_OUTPUT` exactly `out` (which may be relative).
    pub fn preload_into(&self, out: &Path) -> Ran {
        self.preloaded(out, &[], "preload")
    }

    /// The program with `LD_PRELOAD=[before:]libmemshim.so`, `MEMSHIM_OUTPUT=out` and `extra`.
    fn preloaded(&self, out: &Path, extra: &[(&str, &str)], label: &str) -> Ran {
        let mut libs = self.before.clone();
        libs.push(shim_lib());
        let mut cmd = self.command(&self.prog);
        cmd.args(&self.args)
            .env("LD_PRELOAD", join(&libs))
            .env("MEMSHIM_OUTPUT", out);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        deadline::run(&mut cmd, &self.dir.root, label)
    }

    /// The program preloaded in the thin sampling mode (4 KiB, the production mode's path: counted
    /// calls, few recorded), writing under `thin/`. It caught a faster counting path that let a
    /// signal handler's sampled call record (and allocate) while glibc's `malloc` was interrupted.
    pub fn preload_thin(&self) -> Ran {
        let out = self.dir.path("thin");
        std::fs::create_dir_all(&out)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", out.display()));
        self.preloaded(&out, &[("MEMSHIM_SAMPLE_BYTES", "4096")], "thin")
    }

    /// All four runs: bare, `memshim run`, preloaded, and preloaded in the thin sampling mode; every
    /// traced one must match the bare one exactly. Returns the bare run.
    pub fn all(&self) -> Ran {
        let bare = self.bare();
        let run = self.run();
        let preload = self.preload();
        let thin = self.preload_thin();
        assert_same(&bare, &run, Via::Run);
        assert_same(&bare, &preload, Via::Preload);
        assert_same(&bare, &thin, Via::Preload);
        bare
    }

    /// The JSON report of the thin-mode run of [`Case::all`].
    pub fn thin_report(&self) -> Value {
        report_json(&self.dir.path("thin"))
    }

    /// Both runs' JSON reports: `memshim run`'s and the LD_PRELOAD run's.
    pub fn reports(&self) -> [Value; 2] {
        [
            report_json(&self.run_traces()),
            report_json(&self.preload_traces()),
        ]
    }

    /// The one process `exe` of both reports must have exactly `want` among the sites of `funcs`,
    /// and its trace must be complete.
    pub fn assert_leaks(&self, exe: &str, funcs: &[&str], want: &[(&str, u64, u64)]) {
        for (via, report) in ["memshim run", "LD_PRELOAD"]
            .into_iter()
            .zip(self.reports())
        {
            let p = process_by_exe(&report, exe);
            assert_eq!(
                p["truncated"],
                false,
                "the trace of {exe} under {via} is incomplete: {}\ntrace {}, dropped {}\nnotes: {}",
                dump(p),
                p["trace"],
                p["dropped_events"],
                p["notes"]
            );
            assert_eq!(
                leaks_by_function(p, funcs),
                expected(want),
                "leaks of {exe} in {}:\n{}\nnotes: {}",
                p["trace"],
                dump(p),
                p["notes"]
            );
        }
    }
}

/// The host leaks of `p` whose stacks hold one of `funcs`, summed by the innermost such function
/// (one function leaking from several call paths, as in recursion, has several sites), sorted.
pub fn leaks_by_function(p: &Value, funcs: &[&str]) -> Vec<(String, u64, u64)> {
    let mut sums: Vec<(String, u64, u64)> = Vec::new();
    for (name, bytes, count) in user_summary(p, "host", funcs) {
        match sums.iter_mut().find(|(n, _, _)| *n == name) {
            Some(s) => {
                s.1 += bytes;
                s.2 += count;
            }
            None => sums.push((name, bytes, count)),
        }
    }
    sums.sort();
    sums
}

fn join(libs: &[PathBuf]) -> OsString {
    let mut s = OsString::new();
    for (i, l) in libs.iter().enumerate() {
        if i > 0 {
            s.push(":");
        }
        s.push(l);
    }
    s
}

/// How the shim came into a traced run.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    Run,
    Preload,
}

/// stderr without the shim's own `memshim[pid]: ...` lines.
pub fn program_stderr(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .split_inclusive('\n')
        .filter(|l| !is_shim_line(l))
        .collect()
}

fn is_shim_line(line: &str) -> bool {
    line.strip_prefix("memshim[")
        .and_then(|r| r.split_once("]: "))
        .is_some_and(|(pid, _)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The traced run printed what the bare one printed and ended the same way: `memshim run` exits with
/// the command's status or 128 + its signal; a preloaded program ends exactly as the bare one.
pub fn assert_same(bare: &Ran, traced: &Ran, via: Via) {
    let context = || {
        format!(
            "under the shim ({via:?}):\n{}\n=== bare:\n{}",
            traced.describe(),
            bare.describe()
        )
    };
    assert_eq!(
        traced.stdout_str(),
        bare.stdout_str(),
        "stdout: {}",
        context()
    );
    assert_eq!(traced.stdout, bare.stdout, "stdout bytes: {}", context());
    assert_eq!(
        program_stderr(&traced.stderr),
        program_stderr(&bare.stderr),
        "stderr: {}",
        context()
    );
    match via {
        Via::Run => {
            let want = bare.status.code().or(bare.status.signal().map(|s| 128 + s));
            assert_eq!(traced.status.code(), want, "exit status: {}", context());
        }
        Via::Preload => assert_eq!(
            traced.status.into_raw(),
            bare.status.into_raw(),
            "exit status: {}",
            context()
        ),
    }
    assert!(
        traced.leftover.is_empty() || traced.leftover.len() <= bare.leftover.len(),
        "processes left running: {:?}: {}",
        traced.leftover,
        context()
    );
}

#[test]
fn shim_lines_are_recognised() {
    assert!(is_shim_line("memshim[123]: wrote x\n"));
    assert!(!is_shim_line("memshim[]: x\n"));
    assert!(!is_shim_line("memshim: warning\n"));
    assert_eq!(
        program_stderr(b"a\nmemshim[9]: trace\nb\n"),
        "a\nb\n".to_string()
    );
}
