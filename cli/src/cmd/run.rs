//! `memshim run`: run a command with the shim preloaded, then say where its traces are.
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::traces;

/// The shim's file name.
const LIB_NAME: &str = "libmemshim.so";

/// Runs the subcommand; returns the exit code to leave with (the command's own).
pub fn run(
    output: Option<PathBuf>,
    quiet: bool,
    python_malloc: bool,
    command: Vec<String>,
) -> Result<u8> {
    let lib = find_lib()?;
    let program = command.first().context("no command was given after --")?;
    let dir = match output {
        Some(d) => d,
        None => PathBuf::from(default_dir(program)),
    };
    let dir = prepare_dir(&dir)?;
    let before = traces::in_dir(&dir)?;
    if !before.is_empty() {
        bail!(
            "{} already holds {} traces from another run; remove them or choose another directory with -o",
            dir.display(),
            before.len()
        );
    }
    let mut preload = OsString::from(&lib);
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut cmd = Command::new(program);
    cmd.args(&command[1..])
        .env("LD_PRELOAD", preload)
        .env("MEMSHIM_OUTPUT", &dir)
        .env("MEMSHIM_QUIET", "1");
    // Symbols are added after the command, out of its processes (see append_symbols), unless the
    // user asked for in-process symbolization one way or the other.
    if std::env::var_os("MEMSHIM_SYMBOLIZE").is_none() {
        cmd.env("MEMSHIM_SYMBOLIZE", "0");
    }
    if python_malloc {
        cmd.env("PYTHONMALLOC", "malloc");
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {program}"))?;
    // Like a shell, leave Ctrl-C and Ctrl-\ to the command (it shares our terminal) and report after.
    let _ignore = IgnoreInterrupts::new();
    let status = child
        .wait()
        .with_context(|| format!("cannot wait for {program}"))?;
    let found = traces::in_dir(&dir)?;
    for trace in &found {
        if let Err(e) = crate::append_symbols::append(trace) {
            eprintln!(
                "memshim: warning: {e:#} (the report will name frames from the files on disk)"
            );
        }
    }
    let how = match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".into(),
    };
    if !quiet {
        eprintln!(
            "memshim: {program} {how}; {} trace{} in {}; report: memshim report {}",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            dir.display(),
            dir.display()
        );
    }
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        _ => 1,
    })
}

/// `MEMSHIM_LIB`, or `libmemshim.so` beside this executable.
fn find_lib() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("MEMSHIM_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("MEMSHIM_LIB is set to {}, which is not a file", p.display());
        }
        return absolute(&p);
    }
    let exe = std::env::current_exe().context("cannot find the memshim executable's path")?;
    let lib = exe.with_file_name(LIB_NAME);
    if !lib.is_file() {
        bail!(
            "cannot find {LIB_NAME} beside {}; build it with `cargo build --release` or point MEMSHIM_LIB at it",
            exe.display()
        );
    }
    Ok(lib)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// Creates the output directory (mode 0700) and returns its absolute path.
fn prepare_dir(dir: &Path) -> Result<PathBuf> {
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
    }
    absolute(dir)
}

fn default_dir(program: &str) -> String {
    let name: String = Path::new(program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("memshim-{name}-{secs}")
}

/// Ignores SIGINT and SIGQUIT while alive, restoring the previous handlers after.
struct IgnoreInterrupts {
    old: [libc::sighandler_t; 2],
}

const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGQUIT];

impl IgnoreInterrupts {
    fn new() -> Self {
        // SAFETY: SIG_IGN is a valid disposition for both signals; set after the child was spawned,
        // so the child keeps the default ones.
        #[allow(unsafe_code)]
        let old = SIGNALS.map(|s| unsafe { libc::signal(s, libc::SIG_IGN) });
        IgnoreInterrupts { old }
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        for (s, h) in SIGNALS.iter().zip(self.old) {
            // SAFETY: restores the disposition `signal` returned for the same signal.
            #[allow(unsafe_code)]
            unsafe {
                libc::signal(*s, h)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_dir_is_named_after_the_program() {
        let d = super::default_dir("/usr/bin/python3");
        assert!(d.starts_with("memshim-python3-"), "{d}");
        assert!(super::default_dir("./we ird").starts_with("memshim-we_ird-"));
    }
}
