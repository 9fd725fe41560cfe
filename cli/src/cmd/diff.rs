//! `memshim diff BEFORE AFTER`: what changed between two runs (see `report::diff`), drawn by the
//! renderer of the format asked for.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::args::DiffFormat;
use crate::render::{json::Json, markdown::Markdown, text::Text, Render};
use crate::report::diff::{diff, Diff};
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
    renderer(format, top).render(&d, &mut out)?;
    out.flush().context("cannot write the diff")
}

/// The renderer of `format`, showing `top` sites per process.
fn renderer(format: DiffFormat, top: usize) -> Box<dyn Render<Diff>> {
    match format {
        DiffFormat::Text => Box::new(Text { top }),
        DiffFormat::Json => Box::new(Json),
        DiffFormat::Markdown => Box::new(Markdown::new(top)),
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    #[test]
    fn every_format_the_help_lists_draws_the_diff() {
        let d = crate::render::changes::fixture();
        for format in super::DiffFormat::value_variants() {
            let mut out = Vec::new();
            super::renderer(*format, 10)
                .render(&d, &mut out)
                .expect("rendered");
            let text = String::from_utf8(out).expect("utf-8");
            assert!(text.contains("leak_per_request"), "{format:?}: {text}");
        }
    }
}
