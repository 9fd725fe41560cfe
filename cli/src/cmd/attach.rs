//! `memshim attach PID`: trace a process that is already running, from now until `--duration`
//! ends, Ctrl-C, or the process exits; then say where the trace is. The process goes on as before.
//!
//! Leaves with 0 once detached (or once the process ended while traced), 1 with one line saying
//! what went wrong and what to do otherwise. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to memshim
//! detach (they are not passed on: the process is not memshim's child).
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::attach::{self, target::Process};
use crate::cmd::run::{find_lib, prepare_dir};
use crate::{signals, traces};

/// Settings of memshim's own environment that reach the shim as they would under `memshim run`.
const PASSED_ON: [&str; 12] = [
    "MEMSHIM_STACK_DEPTH",
    "MEMSHIM_HEAP",
    "MEMSHIM_MMAP",
    "MEMSHIM_CUDA",
    "MEMSHIM_CUPTI_LIB",
    "MEMSHIM_TORCH",
    "MEMSHIM_PYTHON",
    "MEMSHIM_SAMPLE_BYTES",
    "MEMSHIM_SAMPLE_EVENTS",
    "MEMSHIM_UNWIND",
    "MEMSHIM_COMPRESS",
    "MEMSHIM_SYMBOLIZE",
];

/// Runs the subcommand (`pid` and `duration` checked, see `settings::Attach`); returns the exit
/// code.
pub fn run(pid: i32, duration: Option<f64>, output: Option<PathBuf>, quiet: bool) -> Result<u8> {
    let proc = Process::check(pid)?;
    let lib = find_lib()?;
    let lib = std::fs::canonicalize(&lib)
        .with_context(|| format!("cannot resolve the path of {}", lib.display()))?;
    let dir = output.unwrap_or_else(|| PathBuf::from(default_dir(&proc.exe, pid)));
    let dir = prepare_dir(&dir)?;
    let dir = std::fs::canonicalize(&dir)
        .with_context(|| format!("cannot resolve the path of {}", dir.display()))?;
    if !traces::in_dir(&dir)?.is_empty() {
        bail!(
            "{} already holds traces from another run; remove them or choose another directory with -o",
            dir.display()
        );
    }
    for (what, path) in [("the shim", &lib), ("the output directory", &dir)] {
        if !proc.sees_same(path) {
            bail!(
                "process {pid} lives in another mount namespace (a container) where {what} {} is not the same file; run memshim attach inside the container, or bind-mount {} at the same path there",
                path.display(),
                path.display()
            );
        }
    }
    give_to_owner(&proc, &dir)?;
    if let Some(inner) = proc.inner_pid().filter(|&p| p != pid && !quiet) {
        eprintln!(
            "memshim: process {pid} is in another PID namespace, where it is process {inner}: its trace is named after {inner}"
        );
    }
    // Taken by this thread from here on, so Ctrl-C during the attach waits for it to finish.
    signals::block();
    let result = trace_for(&proc, &lib, &dir, duration, quiet);
    signals::drain_and_unblock();
    result
}

fn trace_for(
    proc: &Process,
    lib: &Path,
    dir: &Path,
    duration: Option<f64>,
    quiet: bool,
) -> Result<u8> {
    let pid = proc.pid;
    attach::attach(proc, lib, &settings(dir))?;
    if !quiet {
        let until = match duration {
            Some(d) => format!("for {d} s (Ctrl-C detaches sooner)"),
            None => "until Ctrl-C or until it exits".to_string(),
        };
        eprintln!(
            "memshim: attached to process {pid} ({}), tracing into {} {until}",
            proc.exe,
            dir.display()
        );
    }
    let ended = wait(pid, duration.map(Duration::from_secs_f64));
    if ended {
        if !quiet {
            eprintln!("memshim: process {pid} ended while traced; its trace is complete");
        }
    } else {
        attach::detach(proc)?;
    }
    let by = if ended {
        crate::append_symbols::AddedBy::AttachedEnd
    } else {
        crate::append_symbols::AddedBy::Detach
    };
    let mut names = crate::symbol_cache::DiskCache::default();
    for trace in traces::in_dir(dir)? {
        if let Err(e) = crate::append_symbols::append(&trace, by, &mut names) {
            eprintln!(
                "memshim: warning: {e:#} (the report will name frames from the files on disk)"
            );
        }
    }
    if !quiet {
        if !ended {
            eprintln!("memshim: detached from process {pid}, which goes on untraced");
        }
        eprintln!(
            "memshim: the trace is in {}; see it with: memshim report {}",
            dir.display(),
            dir.display()
        );
    }
    Ok(0)
}

/// Waits until `limit` has passed, a signal came, or the process ended (true then).
fn wait(pid: i32, limit: Option<Duration>) -> bool {
    let start = Instant::now();
    loop {
        if !alive(pid) {
            return true;
        }
        let left = limit.map(|l| l.saturating_sub(start.elapsed()));
        if left == Some(Duration::ZERO) {
            return false;
        }
        let tick = left.map_or(Duration::from_millis(100), |l| {
            l.min(Duration::from_millis(100))
        });
        if signals::wait_one(tick).is_some() {
            return !alive(pid);
        }
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

/// The shim's settings: where to write, quietly (the program's stderr is its own), and what of
/// memshim's environment is meant for it.
fn settings(dir: &Path) -> String {
    let mut s = format!("MEMSHIM_OUTPUT={}\nMEMSHIM_QUIET=1\n", dir.display());
    // Symbols are added after detach, out of the process (as `memshim run` does).
    if std::env::var_os("MEMSHIM_SYMBOLIZE").is_none() {
        s.push_str("MEMSHIM_SYMBOLIZE=0\n");
    }
    for name in PASSED_ON {
        if let Some(v) = std::env::var_os(name) {
            s.push_str(&format!("{name}={}\n", v.to_string_lossy()));
        }
    }
    s
}

/// A directory memshim (as root) made for a process of another user is given to that user, who
/// must write the trace into it.
fn give_to_owner(proc: &Process, dir: &Path) -> Result<()> {
    let Some((uid, gid)) = proc.owner() else {
        return Ok(());
    };
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if meta.uid() == uid {
        return Ok(());
    }
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).with_context(|| {
        format!(
            "process {} runs as user {uid}, who cannot write to {}; choose a directory that user may write with -o",
            proc.pid,
            dir.display()
        )
    })
}

fn default_dir(exe: &str, pid: i32) -> String {
    super::run::output_dir_name(exe, Some(pid))
}
