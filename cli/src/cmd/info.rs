//! `memshim info`: what a trace holds, without analysing it.
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::{replay, traces};

/// Runs the subcommand.
pub fn run(paths: &[PathBuf]) -> Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let files = traces::collect(paths)?;
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let r = match replay::replay(f) {
            Ok(r) => r,
            // One unreadable trace of several is described as such; the others still are.
            Err(e) if files.len() > 1 => {
                writeln!(out, "trace:        {}", f.display())?;
                writeln!(out, "unreadable:   {:#}", e.root_cause())?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let h = &r.header;
        let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        writeln!(out, "trace:        {} ({size} bytes)", f.display())?;
        writeln!(
            out,
            "process:      pid {} (parent {}){}",
            h.pid,
            h.ppid,
            if h.forked { ", fork child" } else { "" }
        )?;
        writeln!(out, "executable:   {}", h.exe)?;
        writeln!(out, "command:      {}", h.argv.join(" "))?;
        writeln!(out, "host:         {}", h.hostname)?;
        writeln!(
            out,
            "started:      {} ns since the Unix epoch",
            h.start_unix_ns
        )?;
        writeln!(
            out,
            "shim:         {} (stack depth {})",
            h.shim_version, h.stack_depth
        )?;
        writeln!(
            out,
            "duration:     {:.3} s",
            r.last_t.saturating_sub(h.clock_start_ns) as f64 / 1e9
        )?;
        let mut counts: Vec<_> = r.counts.iter().collect();
        counts.sort();
        let total: u64 = counts.iter().map(|(_, n)| **n).sum();
        writeln!(out, "events:       {total}")?;
        for (k, n) in counts {
            writeln!(out, "  {k:<16}{n}")?;
        }
        writeln!(out, "dropped:      {}", r.dropped)?;
        let end = match &r.end {
            Some(e) => format!("{:?}", e.reason).to_lowercase(),
            None => "none".into(),
        };
        writeln!(out, "end:          {end}")?;
        writeln!(
            out,
            "truncated:    {}",
            match (r.truncated, r.still_writing) {
                (_, true) => "no end yet: still being written (its process is running)",
                (true, false) => "yes",
                _ => "no",
            }
        )?;
        if let Some(c) = &r.corrupt {
            writeln!(out, "corrupt:      {c}")?;
        }
        for n in &r.notes {
            writeln!(out, "note:         {n}")?;
        }
    }
    out.flush().context("cannot write to standard output")
}
