//! `memshim export`: the traces' data in formats other tools open: collapsed stacks for flame
//! graphs (`--collapsed`), a pprof profile (`--pprof`), a timeline for Perfetto (`--perfetto`), a
//! speedscope profile (`--speedscope`), a flame-graph SVG (`--flamegraph`).
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::args::{CollapsedBy, Memory};
use crate::export::{collapsed, perfetto, pprof, speedscope};
use crate::report::redact::Redactions;
use crate::settings::{Export, Exported};
use crate::{replay, traces};

/// What is written as it is made, to `-o FILE` or standard output.
enum Kind {
    Collapsed(CollapsedBy, Memory),
    Speedscope(CollapsedBy, Memory),
    Perfetto,
}

/// Runs the subcommand.
pub fn run(s: &Export) -> Result<()> {
    let (paths, output) = (&s.paths[..], s.output.as_deref());
    let kind = match &s.kind {
        Exported::Pprof(memory) => return run_pprof(paths, *memory, output, s.redact),
        Exported::Flamegraph { svg, by } => {
            return run_flamegraph(paths, *by, svg, s.redact, s.all_frames)
        }
        Exported::Collapsed(by, memory) => Kind::Collapsed(*by, *memory),
        Exported::Speedscope(by, memory) => Kind::Speedscope(*by, *memory),
        Exported::Perfetto => Kind::Perfetto,
    };
    stream(paths, kind, output, s.redact, s.all_frames)
}

/// Writes collapsed stacks, a speedscope profile or a timeline; with `all_frames`, collapsed stacks
/// and speedscope profiles keep the frames the reports hide (see `report::frame_marks`).
fn stream(
    paths: &[PathBuf],
    kind: Kind,
    output: Option<&Path>,
    redact: bool,
    all_frames: bool,
) -> Result<()> {
    let files = traces::collect(paths)?;
    let mut dest = destination(output)?;
    // Redacted exports are made whole first, then redacted: collapsed stacks as text, the timeline
    // string by string (its keys stay as they are).
    let mut held = Vec::new();
    let mut hosts = Vec::new();
    {
        let out: &mut dyn Write = if redact { &mut held } else { &mut dest };
        match kind {
            Kind::Collapsed(by, memory) => {
                for f in &files {
                    let Some(mut t) = readable(f, files.len())? else {
                        continue;
                    };
                    hosts.push(t.header.hostname.clone());
                    t.all_frames = all_frames;
                    collapsed::write(&t, by, memory, out)
                        .context("cannot write the collapsed stacks")?;
                }
            }
            Kind::Speedscope(by, memory) => {
                let mut all = readable_all(&files)?;
                all.iter_mut().for_each(|t| t.all_frames = all_frames);
                hosts.extend(all.iter().map(|t| t.header.hostname.clone()));
                speedscope::write(&all, by, memory, out)
                    .context("cannot write the speedscope profile")?;
            }
            Kind::Perfetto => {
                let all = readable_all(&files)?;
                hosts.extend(all.iter().map(|t| t.header.hostname.clone()));
                perfetto::write(&all, out).context("cannot write the timeline")?;
            }
        }
    }
    if redact {
        let r = Redactions::for_hosts(hosts);
        let text = String::from_utf8_lossy(&held);
        let redacted = match kind {
            Kind::Collapsed(..) => r.text(&text),
            Kind::Perfetto | Kind::Speedscope(..) => {
                let mut v: serde_json::Value =
                    serde_json::from_str(&text).context("the export is not JSON")?;
                r.json(&mut v);
                serde_json::to_string(&v).context("cannot write the export")?
            }
        };
        dest.write_all(redacted.as_bytes())
            .context("cannot write the export")?;
    }
    dest.flush().context("cannot write the export")
}

/// Runs `export --pprof`. The profile is binary, so redaction cannot be done on the finished text:
/// names are redacted as they go into the profile's string table.
fn run_pprof(paths: &[PathBuf], memory: Memory, output: Option<&Path>, redact: bool) -> Result<()> {
    if output.is_none() && io::stdout().is_terminal() {
        anyhow::bail!(
            "a pprof profile is binary and standard output is a terminal; write it to a file with -o profile.pb.gz"
        );
    }
    let files = traces::collect(paths)?;
    let all = readable_all(&files)?;
    let hosts = all.iter().map(|t| t.header.hostname.clone()).collect();
    let redactions = redact.then(|| Redactions::for_hosts(hosts));
    let mut dest = destination(output)?;
    pprof::write(&all, memory, redactions.as_ref(), &mut dest)
        .and_then(|()| dest.flush())
        .context("cannot write the pprof profile")
}

/// Runs `export --flamegraph FILE.svg` (of the host heap, into an `.svg` file: see
/// `settings::Exported`): the host heap's flame graph, as the reports merge it.
fn run_flamegraph(
    paths: &[PathBuf],
    by: CollapsedBy,
    svg: &Path,
    redact: bool,
    all_frames: bool,
) -> Result<()> {
    let files = traces::collect(paths)?;
    let mut all = readable_all(&files)?;
    all.iter_mut().for_each(|t| t.all_frames = all_frames);
    let mut image = Vec::new();
    crate::export::flamegraph::write(&all, by, &mut image)
        .context("cannot draw the flame graph")?;
    if redact {
        let r = Redactions::for_hosts(all.iter().map(|t| t.header.hostname.clone()).collect());
        image = r.text(&String::from_utf8_lossy(&image)).into_bytes();
    }
    std::fs::write(svg, image).with_context(|| format!("cannot write {}", svg.display()))
}

/// `-o FILE`, or standard output.
fn destination(output: Option<&Path>) -> Result<Box<dyn Write>> {
    Ok(match output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

/// The replays of every file that can be read (see `readable`).
fn readable_all(files: &[PathBuf]) -> Result<Vec<replay::Replayed>> {
    let mut all = Vec::new();
    for f in files {
        all.extend(readable(f, files.len())?);
    }
    Ok(all)
}

/// The replay of `file`; of several files, one that cannot be read at all is skipped with a warning
/// (the others are exported).
fn readable(file: &Path, of: usize) -> Result<Option<replay::Replayed>> {
    match replay::replay(file) {
        Ok(t) => Ok(Some(t)),
        Err(e) if of > 1 => {
            eprintln!("memshim: warning: {e:#}; left out of the export");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
