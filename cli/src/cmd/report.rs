//! `memshim report`: replay traces and render one report.
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::args::Format;
use crate::render::{html::Html, json::Json, markdown::Markdown, text::Text, Render};
use crate::{replay, report, traces};

/// How the report is shown.
pub struct View {
    pub format: Format,
    pub top: usize,
    pub redact: bool,
    pub filter: report::filter::Filter,
    /// The time window of `--since`/`--until`.
    pub window: replay::Window,
    /// `--color`: auto, always or never (text to a terminal only).
    pub color: String,
}

/// Runs the subcommand.
pub fn run(paths: &[PathBuf], view: &View, output: Option<&Path>) -> Result<()> {
    let (format, top) = (view.format, view.top);
    let w = view.window;
    for (flag, v) in [("--since", w.since_s), ("--until", w.until_s)] {
        if v.is_some_and(|s| !s.is_finite() || s < 0.0) {
            anyhow::bail!(
                "{flag} takes seconds since each process started, 0 or more (got {})",
                v.unwrap_or_default()
            );
        }
    }
    if let (Some(a), Some(b)) = (w.since_s, w.until_s) {
        if a > b {
            anyhow::bail!("--since {a} is after --until {b}: the window would be empty");
        }
    }
    let files = traces::collect(paths)?;
    let mut replayed = Vec::with_capacity(files.len());
    let mut unreadable = Vec::new();
    for f in &files {
        match replay::replay_window(f, view.window) {
            Ok(r) => {
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
    let ceilings = crate::bench::ceilings::stored();
    let mut model = report::build::report(replayed, &ceilings);
    model.unreadable = unreadable;
    report::filter::apply(&mut model, &view.filter);
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
    match output {
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
            let mut w = BufWriter::new(stdout.lock());
            let written = if colour {
                let mut plain = Vec::new();
                renderer.render(&model, &mut plain).and_then(|()| {
                    let text = String::from_utf8_lossy(&plain);
                    w.write_all(crate::render::colour::paint(&text).as_bytes())
                })
            } else {
                renderer.render(&model, &mut w)
            };
            written
                .and_then(|()| w.flush())
                .context("cannot write the report")
        }
    }
}
