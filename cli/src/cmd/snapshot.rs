//! `memshim snapshot PID`: a report of what a traced process holds now, while it runs on. Its shim
//! (loaded by `memshim run` or by `memshim attach`) is made to write out every event it recorded,
//! through the attach injector calling its exported `memshim_flush` on one thread held for the
//! moment of the call; then the trace so far is reported as `memshim report` reports it.
//!
//! Never stops the process for longer than that call, sends it no signal (a signal is the
//! program's own to use), or changes its trace. Where it may not be ptraced, the report still
//! comes, of what the shim had written by itself (it writes at least every 100 ms), and says so.
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::args::Format;
use crate::attach::{self, target::Process};
use crate::find_trace;
use crate::settings::View;

/// How long the shim's writer may take to write out what it holds.
const FLUSH_TIMEOUT_MS: u32 = 5000;
/// Without the flush: how long to wait for the shim to write by itself (it writes at least every
/// 100 ms), so that the report holds at least what was recorded before the command started.
const SELF_FLUSH: Duration = Duration::from_millis(250);

/// Runs the subcommand; returns the exit code.
pub fn run(
    pid: u32,
    format: Format,
    top: usize,
    output: Option<PathBuf>,
    quiet: bool,
) -> Result<u8> {
    let path = find_trace::of_pid(pid)?;
    let traced = find_trace::header(&path)?.pid;
    let flushed = i32::try_from(traced)
        .map_err(anyhow::Error::from)
        .and_then(Process::check)
        .and_then(|proc| attach::flush(&proc, FLUSH_TIMEOUT_MS));
    match flushed {
        Ok(()) if !quiet => eprintln!(
            "memshim: process {traced} wrote out what it recorded to {}",
            path.display()
        ),
        Ok(()) => {}
        Err(e) => {
            eprintln!(
                "memshim: warning: could not make process {traced} write out what it recorded ({e:#}); the report holds what its shim had written by itself (at least every 100 ms)"
            );
            std::thread::sleep(SELF_FLUSH);
        }
    }
    let view = View {
        format,
        top,
        redact: false,
        filter: Default::default(),
        window: Default::default(),
        color: "auto".into(),
        fail_on: Vec::new(),
        all_frames: false,
        suppressions: None,
    };
    crate::cmd::report::run(&[path], &view, output.as_deref().map(Path::new))
}
