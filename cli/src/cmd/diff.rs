//! `memshim diff BEFORE AFTER`: what changed between two runs (see `report::diff`).
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::args::DiffFormat;
use crate::report::diff::{diff, Change, Diff};
use crate::units::{blocks, human_bytes, thousands};
use crate::{replay, report, traces};

/// Runs the subcommand.
pub fn run(
    before: &PathBuf,
    after: &PathBuf,
    format: DiffFormat,
    top: usize,
    min_bytes: u64,
) -> Result<()> {
    let ceilings = crate::bench::ceilings::stored();
    let load = |p: &PathBuf| -> Result<report::model::Report> {
        let replayed = traces::collect(std::slice::from_ref(p))?
            .iter()
            .map(|f| replay::replay(f))
            .collect::<Result<Vec<_>>>()?;
        Ok(report::build::report_parts(replayed, &ceilings, false))
    };
    let d = diff(&load(before)?, &load(after)?, min_bytes);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match format {
        DiffFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &d).map_err(io::Error::other)?;
            writeln!(out)?;
        }
        DiffFormat::Text => text(&d, top, &mut out)?,
        DiffFormat::Markdown => markdown(&d, top, &mut out)?,
    }
    out.flush().context("cannot write the diff")
}

fn change(c: &Change) -> String {
    let sign = if c.delta > 0 {
        "+"
    } else if c.delta < 0 {
        "-"
    } else {
        "±"
    };
    format!(
        "{} -> {} ({sign}{})",
        human_bytes(c.before),
        human_bytes(c.after),
        human_bytes(c.delta.unsigned_abs())
    )
}

fn text(d: &Diff, top: usize, out: &mut dyn Write) -> io::Result<()> {
    for p in &d.processes {
        writeln!(
            out,
            "== {} (pid {} -> {})",
            p.program, p.pid_before, p.pid_after
        )?;
        writeln!(out, "peak heap:     {}", change(&p.peak_heap))?;
        writeln!(out, "leaked heap:   {}", change(&p.leaked_heap))?;
        if p.peak_device.before + p.peak_device.after > 0 {
            writeln!(out, "peak device:   {}", change(&p.peak_device))?;
            writeln!(out, "leaked device: {}", change(&p.leaked_device))?;
        }
        if p.sites.is_empty() {
            writeln!(out, "no leak site changed")?;
        }
        for s in p.sites.iter().take(top) {
            writeln!(
                out,
                "  {} {} in {} -> {}  {}",
                s.memory,
                change(&s.bytes),
                thousands(s.count.before),
                blocks(s.count.after, "block"),
                site(s)
            )?;
        }
        for t in p.transfers.iter().filter(|t| t.bytes.delta != 0) {
            writeln!(out, "  transfers {}: {}", t.kind, change(&t.bytes))?;
        }
    }
    for p in &d.only_before {
        writeln!(out, "only in the first run: {p}")?;
    }
    for p in &d.only_after {
        writeln!(out, "only in the second run: {p}")?;
    }
    Ok(())
}

/// A site's innermost frames, innermost first.
fn site(s: &crate::report::diff::SiteChange) -> String {
    s.functions
        .iter()
        .take(4)
        .cloned()
        .collect::<Vec<_>>()
        .join(" <- ")
}

/// The same as a Markdown table per process, to paste under a fix.
fn markdown(d: &Diff, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let cell = |s: &str| s.replace('|', "\\|").replace('`', "'");
    writeln!(out, "# memshim diff\n")?;
    for p in &d.processes {
        writeln!(
            out,
            "## `{}` (pid {} -> {})\n",
            cell(&p.program),
            p.pid_before,
            p.pid_after
        )?;
        writeln!(out, "| | before -> after |\n|---|---|")?;
        writeln!(out, "| peak heap | {} |", change(&p.peak_heap))?;
        writeln!(out, "| leaked heap | {} |", change(&p.leaked_heap))?;
        if p.peak_device.before + p.peak_device.after > 0 {
            writeln!(out, "| peak device | {} |", change(&p.peak_device))?;
            writeln!(out, "| leaked device | {} |", change(&p.leaked_device))?;
        }
        writeln!(out)?;
        if p.sites.is_empty() {
            writeln!(out, "No leak site changed.\n")?;
            continue;
        }
        writeln!(
            out,
            "| memory | leaked | blocks | site |\n|---|---|---|---|"
        )?;
        for s in p.sites.iter().take(top) {
            writeln!(
                out,
                "| {} | {} | {} -> {} | `{}` |",
                s.memory,
                change(&s.bytes),
                thousands(s.count.before),
                thousands(s.count.after),
                cell(&site(s))
            )?;
        }
        writeln!(out)?;
    }
    for p in &d.only_before {
        writeln!(out, "- only in the first run: `{}`", cell(p))?;
    }
    for p in &d.only_after {
        writeln!(out, "- only in the second run: `{}`", cell(p))?;
    }
    Ok(())
}
