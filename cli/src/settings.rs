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
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use clap::Parser;

    use super::*;

    /// The settings of a command line, or its error as the user sees it.
    fn settings(line: &[&str]) -> Result<Settings, String> {
        let cli = crate::args::Cli::try_parse_from(line).map_err(|e| e.to_string())?;
        Settings::try_from(cli.command).map_err(|e| format!("{e:#}"))
    }

    fn error(line: &[&str]) -> String {
        match settings(line) {
            Ok(_) => panic!("{line:?} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_report_window_is_checked_before_any_trace_is_read() {
        assert_eq!(
            error(&["memshim", "report", "--since=-1", "t"]),
            "--since takes seconds since each process started, 0 or more (got -1)"
        );
        assert_eq!(
            error(&["memshim", "report", "--until", "inf", "t"]),
            "--until takes seconds since each process started, 0 or more (got inf)"
        );
        assert_eq!(
            error(&["memshim", "report", "--since", "2", "--until", "1", "t"]),
            "--since 2 is after --until 1: the window would be empty"
        );
        let Ok(Settings::Report(r)) = settings(&["memshim", "report", "--since", "0.5", "t"])
        else {
            panic!("a window from 0.5 s is a report's");
        };
        assert_eq!(
            (r.view.window.since_s, r.view.window.until_s),
            (Some(0.5), None)
        );
        assert_eq!(r.paths, [PathBuf::from("t")]);
    }

    #[test]
    fn attach_takes_a_process_other_than_memshim_for_a_time_of_0_or_more() {
        assert_eq!(
            error(&["memshim", "attach", "--duration=-2", "10"]),
            "--duration -2 is not a number of seconds of 0 or more"
        );
        assert_eq!(error(&["memshim", "attach", "0"]), "0 is not a process id");
        let me = std::process::id().to_string();
        assert_eq!(
            error(&["memshim", "attach", &me]),
            "memshim cannot attach to itself"
        );
        assert!(matches!(
            settings(&["memshim", "attach", "--duration", "1.5", "10"]),
            Ok(Settings::Attach(Attach {
                pid: 10,
                duration: Some(1.5),
                ..
            }))
        ));
    }

    #[test]
    fn top_reads_from_ten_times_a_second_to_once_an_hour() {
        assert_eq!(
            error(&["memshim", "top", "--interval", "0.01"]),
            "--interval takes seconds from 0.1 to 3600 (got 0.01)"
        );
        assert_eq!(
            error(&["memshim", "top", "--interval", "NaN"]),
            "--interval takes seconds from 0.1 to 3600 (got NaN)"
        );
        let Ok(Settings::Top(t)) = settings(&["memshim", "top", "--interval", "0.5"]) else {
            panic!("half a second is an interval");
        };
        assert_eq!(t.interval, Duration::from_millis(500));
    }

    #[test]
    fn a_flame_graph_is_of_the_host_heap_into_an_svg_file() {
        assert_eq!(
            error(&["memshim", "export", "--flamegraph", "f.svg", "--memory", "device", "t"]),
            "the flame graph covers the host heap only; leave out --memory, or use --collapsed or --speedscope for device memory"
        );
        assert_eq!(
            error(&["memshim", "export", "--flamegraph", "t.mshim", "t"]),
            "the flame graph is an SVG file: name it with .svg (like --flamegraph heap.svg), not t.mshim"
        );
        let kind = |line: &[&str]| match settings(line) {
            Ok(Settings::Export(e)) => e.kind,
            _ => panic!("{line:?} is an export"),
        };
        assert!(matches!(
            kind(&[
                "memshim",
                "export",
                "--flamegraph",
                "f.svg",
                "--by",
                "allocated",
                "t"
            ]),
            Exported::Flamegraph {
                by: CollapsedBy::Allocated,
                ..
            }
        ));
        assert!(matches!(
            kind(&["memshim", "export", "--pprof", "--memory", "device", "t"]),
            Exported::Pprof(Memory::Device)
        ));
        assert!(matches!(
            kind(&["memshim", "export", "--perfetto", "t"]),
            Exported::Perfetto
        ));
        assert!(matches!(
            kind(&["memshim", "export", "--speedscope", "t"]),
            Exported::Speedscope(CollapsedBy::Leaked, Memory::Host)
        ));
        assert!(matches!(
            kind(&["memshim", "export", "--collapsed", "--memory", "mmap", "t"]),
            Exported::Collapsed(CollapsedBy::Leaked, Memory::Mmap)
        ));
    }

    #[test]
    fn every_other_subcommand_takes_its_arguments_as_they_are() {
        let line = ["memshim", "run", "--sample", "64K", "--", "prog", "-x"];
        let Ok(Settings::Run(r)) = settings(&line) else {
            panic!("a run");
        };
        assert_eq!(
            (r.sample, &r.command[..]),
            (Some(65536), &["prog", "-x"].map(String::from)[..])
        );
        assert!(matches!(
            settings(&["memshim", "diff", "--min-bytes", "4K", "a", "b"]),
            Ok(Settings::Diff(Diff {
                min_bytes: 4096,
                ..
            }))
        ));
        assert!(matches!(settings(&["memshim", "man"]), Ok(Settings::Man)));
    }

    /// The `MEMSHIM_*` names in the table rows (`| \`MEMSHIM_X\` | ...`) of `text`.
    fn table_names(text: &str) -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("| `MEMSHIM_"))
            .filter_map(|rest| rest.split('`').next())
            .map(|name| format!("MEMSHIM_{name}"))
            .collect()
    }

    /// The variables `text` reads: the names in its `var("MEMSHIM_X")` and `var_os("MEMSHIM_X")`.
    fn names_read(text: &str) -> BTreeSet<String> {
        let code = text.find("#[cfg(test)]").map_or(text, |i| &text[..i]);
        ["var(\"MEMSHIM_", "var_os(\"MEMSHIM_"]
            .iter()
            .flat_map(|call| code.split(call).skip(1))
            .filter_map(|rest| rest.split('"').next())
            .map(|name| format!("MEMSHIM_{name}"))
            .collect()
    }

    fn sources(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("the source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(std::fs::read_to_string(&path).expect("a source file"));
            }
        }
    }

    #[test]
    fn the_settings_table_names_every_variable_the_cli_reads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![std::fs::read_to_string(root.join("build.rs")).expect("build.rs")];
        sources(&root.join("src"), &mut files);
        let read: BTreeSet<String> = files.iter().flat_map(|f| names_read(f)).collect();
        let docs = include_str!("../../docs/settings.md");
        let (shim, cli) = docs.split_at(docs.find("## The CLI").expect("the CLI's table"));
        let (shim, cli) = (table_names(shim), table_names(cli));
        assert!(cli.len() >= 4, "{cli:?}");
        let undocumented: Vec<&String> = read
            .iter()
            .filter(|n| !cli.contains(*n) && !shim.contains(*n))
            .collect();
        assert!(
            undocumented.is_empty(),
            "read but in neither table of docs/settings.md: {undocumented:?}"
        );
        let unread: Vec<&String> = cli.iter().filter(|n| !read.contains(*n)).collect();
        assert!(
            unread.is_empty(),
            "in the CLI's table but never read: {unread:?}"
        );
    }
}
