//! Loading the shim into a process that is already running, and taking it out of the trace again:
//! the process is checked (`target`), one of its threads is held at a safe point (`inject`, over
//! the system calls in `ptrace`) and made to call `dlopen(libmemshim.so, RTLD_NOW)` and then the
//! shim's `memshim_attach(settings)`; later `memshim_detach()`, the same way (and
//! `memshim_flush()` for `memshim snapshot`, in a shim loaded either way). x86-64 Linux with glibc.
//!
//! Never: leave the process stopped, traced, or with a register or stack word changed.
pub mod inject;
pub mod ptrace;
pub mod target;

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use target::{Mapping, Process};

/// How long a process may take to let one of its threads reach a safe point.
const SAFE_POINT_WAIT: Duration = Duration::from_secs(10);
const RTLD_NOW: u64 = 2;
/// glibc's private flag for `__libc_dlopen_mode`, which older glibc has instead of a `dlopen` in
/// the C library itself.
const RTLD_DLOPEN: u64 = 0x8000_0000;

/// The shim's answers (see the shim's `attach::code`).
fn explain(code: i32, pid: i32, what: &str) -> Result<()> {
    match code {
        0 => Ok(()),
        1 => bail!("process {pid} is already traced by memshim (it runs under `memshim run`, or memshim attach is attached to it now)"),
        2 => bail!("the shim was loaded into process {pid} but could not start its trace there (the output directory must be writable by that process's user)"),
        3 => bail!("memshim was attached to process {pid} before and detached; attaching to one process twice is not supported (the shim stays loaded, idle)"),
        4 => bail!("memshim is not attached to process {pid}"),
        other => bail!("the shim's {what} in process {pid} answered {other}, which this memshim does not know (is the library from another build?)"),
    }
}

/// The error for a thread that may not be traced.
fn denied(pid: i32) -> impl Fn(std::io::Error) -> anyhow::Error {
    move |e| {
        if e.raw_os_error() == Some(libc::EPERM) {
            anyhow!(
                "cannot trace process {pid} (ptrace: {e}): {}",
                target::permission_advice(pid)
            )
        } else {
            anyhow!("cannot trace process {pid} (ptrace: {e})")
        }
    }
}

/// Where the C library of `proc` has `symbol`.
fn in_libc(proc: &Process, maps: &[Mapping], libc: &str, symbol: &str) -> Result<Option<u64>> {
    target::address_of(proc, maps, libc, symbol)
        .with_context(|| format!("cannot look up {symbol} in {libc} of process {}", proc.pid))
}

/// The shim file already mapped in the process, if any.
fn mapped_shim(maps: &[Mapping]) -> Option<&str> {
    maps.iter()
        .map(|m| m.path.as_str())
        .find(|p| p.rsplit('/').next() == Some("libmemshim.so"))
}

/// Loads the shim at `lib` (an absolute path the process sees too) into `proc` and starts its
/// trace with `settings` (`NAME=value` lines). Returns the thread that made the calls.
pub fn attach(proc: &Process, lib: &Path, settings: &str) -> Result<i32> {
    let maps = proc.maps()?;
    let libc = target::libc_of(proc, &maps)?;
    let lib_str = lib.to_string_lossy().into_owned();
    if let Some(other) = mapped_shim(&maps).filter(|p| *p != lib_str) {
        bail!("process {} already has the memshim shim {other} loaded: it is traced already (under `memshim run`, or attached with another memshim)", proc.pid);
    }
    let (dlopen, flags) = match in_libc(proc, &maps, &libc, "dlopen")? {
        Some(a) => (a, RTLD_NOW),
        None => (
            in_libc(proc, &maps, &libc, "__libc_dlopen_mode")?
                .with_context(|| format!("{libc} in process {} has no dlopen", proc.pid))?,
            RTLD_NOW | RTLD_DLOPEN,
        ),
    };
    let dlerror = in_libc(proc, &maps, &libc, "dlerror")?;
    let errno_at = in_libc(proc, &maps, &libc, "__errno_location")?
        .with_context(|| format!("{libc} in process {} has no __errno_location", proc.pid))?;
    let mut held = inject::hold(proc, &libc, SAFE_POINT_WAIT, denied(proc.pid))?;
    // Every argument is on the stack before the first call, so each byte written there is put
    // back as it was before the calls.
    let path_arg = held.push_str(lib_str.as_bytes())?;
    let settings_arg = held.push_str(settings.as_bytes())?;
    let errno_addr = held
        .call(errno_at, &[])
        .context("calling __errno_location")?;
    let errno = held.read_u32(errno_addr)?;
    let handle = held
        .call(dlopen, &[path_arg, flags])
        .with_context(|| format!("loading {lib_str}"))?;
    if handle == 0 {
        let why = match dlerror {
            Some(f) => match held.call(f, &[])? {
                0 => "no reason given".to_string(),
                msg => held.read_str(msg, 4096)?,
            },
            None => "no reason given".to_string(),
        };
        held.write_u32(errno_addr, errno)?;
        held.release()?;
        bail!("process {} could not load {lib_str}: {why}", proc.pid);
    }
    let maps = proc.maps()?;
    let entry = target::address_of(proc, &maps, &lib_str, "memshim_attach")?
        .with_context(|| format!("{lib_str} is loaded in process {} but has no memshim_attach (is it an older shim?)", proc.pid))?;
    let code = held
        .call(entry, &[settings_arg])
        .context("calling memshim_attach")? as i32;
    held.write_u32(errno_addr, errno)?;
    let tid = held.tid();
    held.release()?;
    explain(code, proc.pid, "attach")?;
    Ok(tid)
}

/// Makes the shim in `proc` put back what it redirected and close its trace.
pub fn detach(proc: &Process) -> Result<()> {
    let code = call_shim(proc, "memshim_detach", &[])? as i32;
    explain(code, proc.pid, "detach")
}

/// Makes the shim in `proc` (loaded by `memshim run` or by an attach) write out every event it
/// recorded so far, waiting at most `timeout_ms` for its writer; the trace stays open.
pub fn flush(proc: &Process, timeout_ms: u32) -> Result<()> {
    match call_shim(proc, "memshim_flush", &[u64::from(timeout_ms)])? as i32 {
        0 => Ok(()),
        _ => bail!(
            "the shim in process {} is not tracing it, or its writer did not finish within {timeout_ms} ms",
            proc.pid
        ),
    }
}

/// Calls the shim's exported `entry` with `args` on a thread of `proc` held at a safe point, with
/// `errno` put back after; its return value.
fn call_shim(proc: &Process, entry: &str, args: &[u64]) -> Result<u64> {
    let maps = proc.maps()?;
    let libc = target::libc_of(proc, &maps)?;
    let shim = mapped_shim(&maps)
        .with_context(|| format!("the shim is not loaded in process {}", proc.pid))?
        .to_string();
    let func = target::address_of(proc, &maps, &shim, entry)?
        .with_context(|| format!("{shim} in process {} has no {entry}", proc.pid))?;
    let errno_at = in_libc(proc, &maps, &libc, "__errno_location")?
        .with_context(|| format!("{libc} in process {} has no __errno_location", proc.pid))?;
    let mut held = inject::hold(proc, &libc, SAFE_POINT_WAIT, denied(proc.pid))?;
    let errno_addr = held.call(errno_at, &[])?;
    let errno = held.read_u32(errno_addr)?;
    let answer = held.call(func, args)?;
    held.write_u32(errno_addr, errno)?;
    held.release()?;
    Ok(answer)
}
