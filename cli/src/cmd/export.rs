//! `memshim export`: the traces' data in formats other tools open: collapsed stacks for flame
//! graphs (`--collapsed`), a timeline for Perfetto (`--perfetto`).
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::args::{CollapsedBy, Memory};
use crate::export::{collapsed, perfetto};
use crate::{replay, traces};

/// What to export.
pub enum Kind {
    Collapsed(CollapsedBy, Memory),
    Perfetto,
}

/// Runs the subcommand.
pub fn run(paths: &[PathBuf], kind: Kind, output: Option<&Path>) -> Result<()> {
    let files = traces::collect(paths)?;
    let mut out: Box<dyn Write> = match output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    };
    match kind {
        Kind::Collapsed(by, memory) => {
            for f in &files {
                let t = replay::replay(f)?;
                collapsed::write(&t, by, memory, &mut out)
                    .context("cannot write the collapsed stacks")?;
            }
        }
        Kind::Perfetto => {
            let all = files
                .iter()
                .map(|f| replay::replay(f))
                .collect::<Result<Vec<_>>>()?;
            perfetto::write(&all, &mut out).context("cannot write the timeline")?;
        }
    }
    out.flush().context("cannot write the export")
}
