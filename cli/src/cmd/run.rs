//! `memshim run`: run a command with the shim preloaded, then say where its traces are.
//!
//! Leaves with the command's status whatever happens to the traces (an output directory removed or
//! made unwritable during the run is a warning naming what was lost), forwards the signals sent to
//! it (see `signals`), and says plainly when the command cannot be traced (a static executable) or
//! why a trace holds no allocation.
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::elf_kind::{self, Linking};
use crate::{gate, signals, traces};

/// The shim's file name.
const LIB_NAME: &str = "libmemshim.so";

/// What the traces are checked against after the command: `--fail-on` and `--suppressions`.
pub struct Gate {
    pub limits: Vec<gate::Limit>,
    pub suppressions: Option<PathBuf>,
}

/// Runs the subcommand; returns the exit code to leave with (the command's own).
pub fn run(
    output: Option<PathBuf>,
    quiet: bool,
    python_malloc: bool,
    sample: Option<u64>,
    gate: &Gate,
    command: Vec<String>,
) -> Result<u8> {
    let fail_on = &gate.limits[..];
    // A mistake in the suppressions file is said before the command runs, not after.
    let suppressions = super::report::suppressions(gate.suppressions.as_deref())?;
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
    if let Some(bytes) = sample {
        cmd.env("MEMSHIM_SAMPLE_BYTES", bytes.to_string());
    }
    let linking = elf_kind::resolve(program).map_or(Linking::Unknown, |p| elf_kind::linking(&p));
    let launcher_shell = elf_kind::resolve(program).and_then(|p| crate::launcher::shell_of(&p));
    if linking == Linking::Static {
        eprintln!(
            "memshim: {program} is a static executable (it has no ELF interpreter), so the shim cannot be loaded into it and it cannot be traced; running it untraced"
        );
    }
    // Blocked before the command and any thread start (and unblocked again in the command);
    // the forwarder passes on what is sent to memshim.
    signals::block();
    signals::unblock_in_child(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            signals::unblock();
            return Err(e).with_context(|| format!("cannot run {program}"));
        }
    };
    let root_pid = child.id();
    let forwarder = signals::Forwarder::start(root_pid);
    let exited = signals::wait_exited(child.id());
    forwarder.stop();
    let status = exited
        .and_then(|()| child.wait())
        .with_context(|| format!("cannot wait for {program}"));
    // Still blocked while the traces are finished below (see `signals::drain_and_unblock`).
    let _unblock = UnblockOnReturn;
    let status = status?;
    let found = match traces::in_dir(&dir) {
        Ok(found) => found,
        Err(e) => {
            eprintln!(
                "memshim: warning: {e:#}: the output directory was removed or made unreadable during the run, so this run's traces are lost"
            );
            Vec::new()
        }
    };
    let mut empty = Vec::new();
    let mut names = crate::symbol_cache::DiskCache::default();
    for trace in &found {
        match crate::append_symbols::append(trace, crate::append_symbols::AddedBy::Run, &mut names)
        {
            Ok(a) if a.recorded_nothing => empty.push(trace),
            Ok(_) => {}
            // The file-size limit the command ran under is memshim's too: the shim has already said
            // what it cost the trace, and a second line about the same limit says nothing new.
            Err(e) if hit_file_size_limit(&e) => {}
            Err(e) => eprintln!(
                "memshim: warning: {e:#} (the report will name frames from the files on disk)"
            ),
        }
    }
    if found.is_empty() && traces::in_dir(&dir).is_ok() {
        let probe = dir.join(".memshim-write-probe");
        let writable = std::fs::File::create(&probe).is_ok();
        let _ = std::fs::remove_file(&probe);
        let why = if linking == Linking::Static {
            "it is a static executable, which the shim cannot be loaded into"
        } else if !writable {
            "the output directory is not writable (it was made read-only, or its permissions changed during the run), so the shim could not create its traces"
        } else {
            "the shim was not loaded: the program may clear LD_PRELOAD, be setuid or setgid (the loader then ignores LD_PRELOAD), or be a static executable started by a script"
        };
        eprintln!("memshim: warning: {program} wrote no trace: {why}");
    }
    if let (Some(shell), false, true) = (&launcher_shell, quiet, found.len() > 1) {
        let real = crate::launcher::final_program(&found, root_pid);
        eprintln!(
            "{}",
            crate::launcher::advice(program, shell, found.len(), real.as_deref(), &command[1..])
        );
    }
    for trace in empty.into_iter().filter(|_| !quiet) {
        eprintln!(
            "memshim: note: {}: no allocation reached the shim: the program allocates nothing, or uses its own allocator (its malloc calls never reach libc's)",
            trace.display()
        );
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
    let own = match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        _ => 1,
    };
    if fail_on.is_empty() {
        return Ok(own);
    }
    // The command's own failure is the status to leave with; the limits are still reported.
    let gated = match super::report::load(std::slice::from_ref(&dir), Default::default()) {
        Ok(mut model) => {
            crate::report::suppressions::apply(&mut model, &suppressions);
            super::report::gate_status(&model, fail_on)
        }
        Err(e) => {
            eprintln!("memshim: cannot check --fail-on: {e:#}");
            1
        }
    };
    Ok(if own != 0 { own } else { gated })
}

fn hit_file_size_limit(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.raw_os_error() == Some(libc::EFBIG))
    })
}

/// `MEMSHIM_LIB`, or `libmemshim.so` beside this executable (a build tree, where the shim beside
/// is the one just built), or the copy built into this executable.
pub(crate) fn find_lib() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("MEMSHIM_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("MEMSHIM_LIB is set to {}, which is not a file", p.display());
        }
        return absolute(&p);
    }
    let exe = std::env::current_exe().context("cannot find the memshim executable's path")?;
    let lib = exe.with_file_name(LIB_NAME);
    if lib.is_file() {
        return Ok(lib);
    }
    match crate::bundled_shim::path()? {
        Some(bundled) => Ok(bundled),
        None => bail!(
            "cannot find {LIB_NAME} beside {} and this build carries no copy of its own (it was built with MEMSHIM_BUNDLE_SHIM=0); build it with `cargo build --release` or point MEMSHIM_LIB at it",
            exe.display()
        ),
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// Creates the output directory (mode 0700) and returns its absolute path.
pub(crate) fn prepare_dir(dir: &Path) -> Result<PathBuf> {
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
    output_dir_name(program, None)
}

/// `memshim-NAME[-PID]-SECONDS`: the default output directory of `run` and `attach`, named for the
/// program (characters a shell would trip on made `_`).
pub(super) fn output_dir_name(program: &str, pid: Option<i32>) -> String {
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
    match pid {
        Some(pid) => format!("memshim-{name}-{pid}-{secs}"),
        None => format!("memshim-{name}-{secs}"),
    }
}

/// Unblocks the forwarded signals when `run` returns, however it returns.
struct UnblockOnReturn;

impl Drop for UnblockOnReturn {
    fn drop(&mut self) {
        signals::drain_and_unblock();
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
