//! `memshim report`: replay traces and render one report.
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::args::Format;
use crate::render::{html::Html, json::Json, markdown::Markdown, text::Text, Render};
use crate::settings::View;
use crate::{gate, replay, report, traces};

/// Runs the subcommand (its settings checked, see `settings`); returns the exit status: 0, or `gate::EXIT_LIMIT_BROKEN` when a
/// `--fail-on` limit was broken (each broken limit is one line on stderr, after the report).
pub fn run(paths: &[PathBuf], view: &View, output: Option<&Path>) -> Result<u8> {
    let (format, top) = (view.format, view.top);
    // Read before the traces: a mistake in the file is reported at once.
    let suppressions = suppressions(view.suppressions.as_deref())?;
    // Only the page and the JSON contract carry the flame graphs.
    let flame = matches!(format, Format::Json | Format::Html);
    let mut model = load_frames(paths, view.window, view.all_frames, flame)?;
    report::suppressions::apply(&mut model, &suppressions);
    let pids: Vec<u32> = model.processes.iter().map(|p| p.pid).collect();
    if let Some(missing) = view.filter.pids.iter().find(|p| !pids.contains(p)) {
        let mut held = pids;
        held.sort_unstable();
        anyhow::bail!(
            "--pid {missing}: no trace here is of that process (they are of pids {})",
            held.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let commands: Vec<String> = model.processes.iter().map(|p| p.command.clone()).collect();
    report::filter::apply(&mut model, &view.filter);
    let by_name = !view.filter.programs.is_empty() || !view.filter.excludes.is_empty();
    if by_name && model.processes.is_empty() {
        let mut names: Vec<String> = Vec::new();
        for c in commands {
            if !names.contains(&c) {
                names.push(c);
            }
        }
        let more = names.len().saturating_sub(20);
        names.truncate(20);
        if more > 0 {
            names.push(format!("{more} more"));
        }
        anyhow::bail!(
            "--program/--exclude left no process: the traces here are of {} (name one by its command, its program's file name or its script's)",
            names.join(", ")
        );
    }
    if view.redact {
        let r = report::redact::Redactions::from_env(&model);
        report::redact::redact(&mut model, &r);
    }
    let renderer: Box<dyn Render> = match format {
        Format::Text => Box::new(Text { top }),
        Format::Json => Box::new(Json),
        Format::Markdown => Box::new(Markdown::new(top)),
        Format::Html => Box::new(Html),
    };
    let written = match output {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = BufWriter::new(file);
            renderer
                .render(&model, &mut w)
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {}", path.display()))
        }
        None => {
            let stdout = io::stdout();
            let colour = format == Format::Text
                && crate::render::colour::wanted(
                    &view.color,
                    stdout.is_terminal(),
                    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
                );
            // On a terminal, the text report is wrapped to its width.
            let width = (format == Format::Text && stdout.is_terminal())
                .then(|| console::Term::stdout().size_checked())
                .flatten()
                .map(|(_, cols)| usize::from(cols))
                .filter(|&c| c >= 40);
            let mut w = BufWriter::new(stdout.lock());
            let written = if colour || width.is_some() {
                let mut plain = Vec::new();
                renderer.render(&model, &mut plain).and_then(|()| {
                    let mut text = String::from_utf8_lossy(&plain).into_owned();
                    if let Some(width) = width {
                        text = crate::render::wrap::wrap(&text, width);
                    }
                    if colour {
                        text = crate::render::colour::paint(&text);
                    }
                    w.write_all(text.as_bytes())
                })
            } else {
                renderer.render(&model, &mut w)
            };
            written
                .and_then(|()| w.flush())
                .context("cannot write the report")
        }
    };
    written?;
    let status = gate_status(&model, &view.fail_on);
    // The process ends once this returns: freeing a PyTorch job's report model, a string for each
    // of its frames, was a tenth of the report's time, for nothing.
    std::mem::forget(model);
    Ok(status)
}

/// Checks the report against `--fail-on` limits: one `memshim:` line on stderr per broken limit.
pub fn gate_status(model: &report::model::Report, limits: &[gate::Limit]) -> u8 {
    let broken = gate::check(model, limits);
    for line in &broken {
        eprintln!("memshim: {line}");
    }
    if broken.is_empty() {
        0
    } else {
        gate::EXIT_LIMIT_BROKEN
    }
}

/// The rules of `--suppressions FILE`, none without it.
pub fn suppressions(path: Option<&Path>) -> Result<report::suppressions::Suppressions> {
    path.map_or_else(
        || Ok(Default::default()),
        report::suppressions::Suppressions::load,
    )
}

/// The report model of the traces in `paths` (files or directories), each replayed over `window`.
/// A trace that cannot be read among several is named in the model (and on stderr); when none can
/// be read, or the only one cannot, that is the error.
pub fn load(paths: &[PathBuf], window: replay::Window) -> Result<report::model::Report> {
    load_frames(paths, window, false, false)
}

/// As [`load`]; with `all_frames`, no frame is marked hidden (see `report::frame_marks`).
pub fn load_frames(
    paths: &[PathBuf],
    window: replay::Window,
    all_frames: bool,
    flame: bool,
) -> Result<report::model::Report> {
    let files = traces::collect(paths)?;
    let mut replayed = Vec::with_capacity(files.len());
    let mut unreadable = Vec::new();
    for f in &files {
        match replay::replay_window(f, window) {
            Ok(mut r) => {
                r.all_frames = all_frames;
                if let Some(c) = &r.corrupt {
                    eprintln!("memshim: warning: {}: {c}", f.display());
                }
                replayed.push(r);
            }
            // One trace of several that cannot be read at all (a process killed before its header
            // was complete leaves an empty one) is named in the report; the others are reported.
            Err(e) if files.len() > 1 => {
                eprintln!("memshim: warning: {e:#}; the other traces are reported");
                unreadable.push(report::model::Unreadable {
                    trace: f.display().to_string(),
                    why: format!("{:#}", e.root_cause()),
                });
            }
            Err(e) => return Err(e),
        }
    }
    if let (true, Some(first)) = (replayed.is_empty(), unreadable.first()) {
        anyhow::bail!(
            "none of the {} traces could be read (the first: {}: {})",
            files.len(),
            first.trace,
            first.why
        );
    }
    // The machine's measured ceilings, read once for every process.
    let ceilings = crate::bench::ceilings::stored();
    let mut model = report::build::report_parts(replayed, &ceilings, flame);
    model.unreadable = unreadable;
    Ok(model)
}
