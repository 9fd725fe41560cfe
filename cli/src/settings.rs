//! The command line (see `args`) turned into one checked value per subcommand before anything runs.
//! Every check that needs only the arguments is made here, and its error says what was wrong and
//! what to give instead; what needs the system (a process, a file, the terminal) is checked by the
//! subcommand itself (see `cmd`).
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::args::{CollapsedBy, Command, DiffFormat, Format, Memory};
use crate::{gate, replay, report};

/// One subcommand with its checked settings.
pub enum Settings {
    Run(Run),
    Attach(Attach),
    Top(Top),
    Snapshot(Snapshot),
    Report(Report),
    Bench(Bench),
    Diff(Diff),
    Export(Export),
    Info(Info),
    Completions(clap_complete::Shell),
    Man,
}

/// `memshim run`.
pub struct Run {
    pub output: Option<PathBuf>,
    pub quiet: bool,
    pub python_malloc: bool,
    pub sample: Option<u64>,
    pub fail_on: Vec<gate::Limit>,
    pub suppressions: Option<PathBuf>,
    /// The command and its arguments: never empty.
    pub command: Vec<String>,
}

/// `memshim attach`.
pub struct Attach {
    /// A process id (above 0), not memshim's own.
    pub pid: i32,
    /// Seconds, finite and 0 or more.
    pub duration: Option<f64>,
    pub output: Option<PathBuf>,
    pub quiet: bool,
}

/// `memshim top`.
pub struct Top {
    pub target: Option<String>,
    /// From 0.1 s to an hour.
    pub interval: Duration,
}

/// `memshim snapshot`.
pub struct Snapshot {
    pub pid: u32,
    pub format: Format,
    pub top: usize,
    pub output: Option<PathBuf>,
    pub quiet: bool,
}

/// `memshim report`.
pub struct Report {
    pub paths: Vec<PathBuf>,
    pub view: View,
    pub output: Option<PathBuf>,
}

/// How a report is shown.
pub struct View {
    pub format: Format,
    pub top: usize,
    pub redact: bool,
    pub filter: report::filter::Filter,
    /// The time window of `--since`/`--until`: each finite and 0 or more, the first not after the
    /// second.
    pub window: replay::Window,
    /// `--color`: auto, always or never (text to a terminal only).
    pub color: String,
    /// `--fail-on`: limits the report is checked against.
    pub fail_on: Vec<gate::Limit>,
    /// `--all-frames`: show the frames the reports hide by default.
    pub all_frames: bool,
    /// `--suppressions FILE`: leaks set apart from the program's.
    pub suppressions: Option<PathBuf>,
}

/// `memshim bench`.
pub struct Bench {
    pub output: Option<PathBuf>,
    pub quick: bool,
}

/// `memshim diff`.
pub struct Diff {
    pub before: PathBuf,
    pub after: PathBuf,
    pub format: DiffFormat,
    pub top: usize,
    pub min_bytes: u64,
}

/// `memshim export`.
pub struct Export {
    pub paths: Vec<PathBuf>,
    pub kind: Exported,
    pub output: Option<PathBuf>,
    pub redact: bool,
    pub all_frames: bool,
}

/// What `export` writes.
pub enum Exported {
    Collapsed(CollapsedBy, Memory),
    Speedscope(CollapsedBy, Memory),
    Perfetto,
    Pprof(Memory),
    /// Of the host heap, to a file named `*.svg`.
    Flamegraph {
        svg: PathBuf,
        by: CollapsedBy,
    },
}

/// `memshim info`.
pub struct Info {
    pub paths: Vec<PathBuf>,
}

impl TryFrom<Command> for Settings {
    type Error = anyhow::Error;

    fn try_from(command: Command) -> Result<Settings> {
        Ok(match command {
            Command::Run {
                output,
                quiet,
                python_malloc,
                fail_on,
                sample,
                suppressions,
                command,
            } => {
                if command.is_empty() {
                    bail!("no command was given after --");
                }
                Settings::Run(Run {
                    output,
                    quiet,
                    python_malloc,
                    sample,
                    fail_on,
                    suppressions,
                    command,
                })
            }
            Command::Attach {
                pid,
                duration,
                output,
                quiet,
            } => {
                if let Some(d) = duration.filter(|d| !d.is_finite() || *d < 0.0) {
                    bail!("--duration {d} is not a number of seconds of 0 or more");
                }
                if pid <= 0 {
                    bail!("{pid} is not a process id");
                }
                if pid as u32 == std::process::id() {
                    bail!("memshim cannot attach to itself");
                }
                Settings::Attach(Attach {
                    pid,
                    duration,
                    output,
                    quiet,
                })
            }
            Command::Top { target, interval } => {
                if !interval.is_finite() || !(0.1..=3600.0).contains(&interval) {
                    bail!("--interval takes seconds from 0.1 to 3600 (got {interval})");
                }
                Settings::Top(Top {
                    target,
                    interval: Duration::from_secs_f64(interval),
                })
            }
            Command::Snapshot {
                pid,
                format,
                top,
                output,
                quiet,
            } => Settings::Snapshot(Snapshot {
                pid,
                format,
                top,
                output,
                quiet,
            }),
            Command::Report {
                paths,
                format,
                top,
                output,
                since,
                until,
                color,
                redact,
                pids,
                programs,
                excludes,
                min_bytes,
                fail_on,
                all_frames,
                suppressions,
            } => Settings::Report(Report {
                paths,
                output,
                view: View {
                    format,
                    top,
                    redact,
                    filter: report::filter::Filter {
                        pids,
                        programs,
                        excludes,
                        min_bytes,
                    },
                    window: window(since, until)?,
                    color,
                    fail_on,
                    all_frames,
                    suppressions,
                },
            }),
            Command::Bench { output, quick } => Settings::Bench(Bench { output, quick }),
            Command::Diff {
                before,
                after,
                format,
                top,
                min_bytes,
            } => Settings::Diff(Diff {
                before,
                after,
                format,
                top,
                min_bytes,
            }),
            Command::Export {
                paths,
                collapsed: _,
                speedscope,
                pprof,
                perfetto,
                flamegraph,
                by,
                memory,
                output,
                redact,
                all_frames,
            } => Settings::Export(Export {
                kind: exported(speedscope, pprof, perfetto, flamegraph, by, memory)?,
                paths,
                output,
                redact,
                all_frames,
            }),
            Command::Info { paths } => Settings::Info(Info { paths }),
            Command::Completions { shell } => Settings::Completions(shell),
            Command::Man => Settings::Man,
        })
    }
}

/// The window of `--since` and `--until`.
fn window(since_s: Option<f64>, until_s: Option<f64>) -> Result<replay::Window> {
    for (flag, v) in [("--since", since_s), ("--until", until_s)] {
        if let Some(s) = v.filter(|s| !s.is_finite() || *s < 0.0) {
            bail!("{flag} takes seconds since each process started, 0 or more (got {s})");
        }
    }
    if let (Some(a), Some(b)) = (since_s, until_s) {
        if a > b {
            bail!("--since {a} is after --until {b}: the window would be empty");
        }
    }
    Ok(replay::Window { since_s, until_s })
}

/// What `export` writes, from its flags (clap has made sure exactly one kind was given).
fn exported(
    speedscope: bool,
    pprof: bool,
    perfetto: bool,
    flamegraph: Option<PathBuf>,
    by: CollapsedBy,
    memory: Memory,
) -> Result<Exported> {
    if let Some(svg) = flamegraph {
        if memory != Memory::Host {
            bail!(
                "the flame graph covers the host heap only; leave out --memory, or use --collapsed or --speedscope for {} memory",
                if memory == Memory::Device { "device" } else { "mapped" }
            );
        }
        // A trace named by mistake after the flag would be overwritten.
        if svg.extension().is_none_or(|e| e != "svg") {
            bail!(
                "the flame graph is an SVG file: name it with .svg (like --flamegraph heap.svg), not {}",
                svg.display()
            );
        }
        return Ok(Exported::Flamegraph { svg, by });
    }
    Ok(if pprof {
        Exported::Pprof(memory)
    } else if perfetto {
        Exported::Perfetto
    } else if speedscope {
        Exported::Speedscope(by, memory)
    } else {
        Exported::Collapsed(by, memory)
    })
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
