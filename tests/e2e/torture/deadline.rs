//! Runs a command with a deadline: in a process group of its own, with its output in files (so that
//! a process it leaves behind holds no pipe of ours), killed with its whole group when it hangs,
//! after every process of the group was shown in gdb, so a hang fails with its stacks instead of
//! stalling the suite.
//!
//! A hang is told from a slow run by the group's CPU time: past [`DEADLINE`] the command may go on
//! only while its processes keep using the CPU, up to [`HARD_DEADLINE`]. A deadlock uses none, so it
//! still fails at 30 s; a run that a loaded machine (CI once at load 46 on 2 cores) slowed twentyfold
//! is not called a hang for being slow.
//!
//! # Safety
//! `kill` and `setrlimit` are plain system calls with no memory-safety preconditions.
#![allow(unsafe_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::util::Outcome;
use std::sync::Once;
use std::time::{Duration, Instant};

/// How long any torture program may take, bare or traced, before it must show progress to go on
/// (they take well under a second bare).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// The limit for a command that keeps using the CPU: a livelock spins, and fails here.
pub const HARD_DEADLINE: Duration = Duration::from_secs(240);

/// Past the deadline, how long a window must pass without any CPU time used by the group for the
/// command to count as hung.
const STILL_WINDOW: Duration = Duration::from_secs(5);

/// What a command did (the suite's own [`Outcome`]), and which processes of its group were still
/// there when it ended.
pub struct Ran {
    pub outcome: Outcome,
    /// Pids of the group still alive (not zombies) right after the command ended; they are killed.
    pub leftover: Vec<i32>,
}

impl std::ops::Deref for Ran {
    type Target = Outcome;

    fn deref(&self) -> &Outcome {
        &self.outcome
    }
}

/// A command started by [`Spawned::start`], not yet waited for.
pub struct Spawned {
    pub child: Child,
    what: String,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Spawned {
    /// Starts `cmd` in its own process group, stdout and stderr to `<dir>/<tag>.stdout|.stderr`.
    pub fn start(cmd: &mut Command, dir: &Path, tag: &str) -> Spawned {
        no_core_dumps();
        crate::util::hermetic(cmd);
        let stdout = dir.join(format!("{tag}.stdout"));
        let stderr = dir.join(format!("{tag}.stderr"));
        let file = |p: &Path| {
            std::fs::File::create(p)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", p.display()))
        };
        cmd.stdin(Stdio::null())
            .stdout(file(&stdout))
            .stderr(file(&stderr))
            .process_group(0);
        let what = format!("{cmd:?}");
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Spawned {
            child,
            what,
            stdout,
            stderr,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// What the command wrote on stdout so far.
    pub fn stdout_so_far(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// Waits for the command until `deadline` from now, and past it for as long as its group keeps
    /// using the CPU (up to [`HARD_DEADLINE`]); on a hang, panics with the stacks of every process
    /// of its group (also written to `<tag>.hang.txt` beside its output).
    pub fn wait(mut self, deadline: Duration) -> Ran {
        let pgid = self.pid();
        let start = Instant::now();
        let mut until = start + deadline;
        let mut cpu_seen = group_cpu_ticks(pgid);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for the command") {
                break status;
            }
            let now = Instant::now();
            if now > until && now < start + HARD_DEADLINE.max(deadline) {
                let cpu = group_cpu_ticks(pgid);
                if cpu != cpu_seen {
                    cpu_seen = cpu;
                    until = now + STILL_WINDOW;
                }
            }
            if Instant::now() > until {
                let stacks = group_stacks(pgid);
                let hang = self.stdout.with_extension("hang.txt");
                let _ = std::fs::write(&hang, &stacks);
                kill_group(pgid);
                let _ = self.child.wait();
                panic!(
                    "HANG: `{}` did not finish within {} s (the last {} s without CPU time used, \
                     or past {} s); its output so far:\n{}\n{}\n\
                     --- stacks of its processes (also in {}) ---\n{stacks}",
                    self.what,
                    start.elapsed().as_secs(),
                    STILL_WINDOW.as_secs(),
                    HARD_DEADLINE.as_secs(),
                    self.stdout_so_far(),
                    std::fs::read_to_string(&self.stderr).unwrap_or_default(),
                    hang.display()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let leftover = group_members(pgid);
        kill_group(pgid);
        let read = |p: &Path| {
            std::fs::read(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
        };
        Ran {
            outcome: Outcome {
                stdout: read(&self.stdout),
                stderr: read(&self.stderr),
                status,
                what: self.what,
            },
            leftover,
        }
    }
}

/// Runs `cmd` to its end (or the deadline); see [`Spawned`].
pub fn run(cmd: &mut Command, dir: &Path, tag: &str) -> Ran {
    Spawned::start(cmd, dir, tag).wait(DEADLINE)
}

/// Crash tests must not leave core files in the tree or fill the disk.
fn no_core_dumps() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct it is given and nothing else.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
    });
}

fn kill_group(pgid: i32) {
    // SAFETY: see the module's safety note; the group is one this module made.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// The live (not zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // After the command name in parentheses: state, ppid, pgrp.
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
        .collect();
    pids.sort();
    pids
}

/// The CPU time (user and system clock ticks, every thread's) of the group's live processes,
/// with their pids: a process that ends or starts is progress too.
fn group_cpu_ticks(pgid: i32) -> Vec<(i32, u64)> {
    group_members(pgid)
        .into_iter()
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            // After the name: state is field 3 of stat(5), utime 14 and stime 15.
            let ticks: u64 = rest
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|f| f.parse::<u64>().ok())
                .sum();
            (pid, ticks)
        })
        .collect()
}

/// `gdb -p PID -batch -ex 'thread apply all bt'` for every live process of the group.
fn group_stacks(pgid: i32) -> String {
    let mut all = String::new();
    for pid in group_members(pgid) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        all.push_str(&format!("=== pid {pid}: {cmdline}\n"));
        // What each thread is doing, read at once: gdb may need longer than its 60 s to load a
        // large binary's symbols on a busy machine, and then shows nothing (CI saw that).
        all.push_str(&kernel_view(pid));
        let gdb = Command::new("timeout")
            .args(["60", "gdb", "-nx", "-p", &pid.to_string(), "-batch"])
            .args(["-ex", "thread apply all bt"])
            .stdin(Stdio::null())
            .output();
        match gdb {
            Ok(out) => all.push_str(&String::from_utf8_lossy(&out.stdout)),
            Err(e) => all.push_str(&format!("(no gdb: {e})\n")),
        }
    }
    all
}

/// Each thread's name, state, kernel wait channel and system call (`/proc/PID/task/TID`).
fn kernel_view(pid: i32) -> String {
    let mut out = String::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let dir = t.path();
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let state = read("stat")
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next().map(str::to_string))
            .unwrap_or_default();
        out.push_str(&format!(
            "  task {} {:?} state {state} wchan {} syscall {}\n",
            t.file_name().to_string_lossy(),
            read("comm"),
            read("wchan"),
            read("syscall")
        ));
    }
    out
}
