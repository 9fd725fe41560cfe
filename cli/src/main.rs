//! `memshim`: runs programs under the shim and replays their traces into reports.
//!
//! Exit codes: `run` returns the traced command's status (128 + signal when it was killed); the
//! other subcommands return 0 on success and 1 on error, printed as one `memshim: ...` line with its
//! whole cause chain. With `--fail-on`, `report` and `run` (when the command itself succeeded)
//! return 3 when a limit is broken. A closed output pipe (`memshim report ... | head`) is not an error.
use memshim_cli::{args, cmd, replay, report};

use std::io;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Run {
            output,
            quiet,
            python_malloc,
            fail_on,
            sample,
            suppressions,
            command,
        } => cmd::run::run(
            output,
            quiet,
            python_malloc,
            sample,
            &cmd::run::Gate {
                limits: fail_on,
                suppressions,
            },
            command,
        ),
        args::Command::Attach {
            pid,
            duration,
            output,
            quiet,
        } => cmd::attach::run(pid, duration, output, quiet),
        args::Command::Top { target, interval } => {
            cmd::top::run(target.as_deref(), interval).map(|()| 0)
        }
        args::Command::Snapshot {
            pid,
            format,
            top,
            output,
            quiet,
        } => cmd::snapshot::run(pid, format, top, output, quiet),
        args::Command::Report {
            paths,
            format,
            top,
            output,
            redact,
            pids,
            programs,
            excludes,
            min_bytes,
            since,
            until,
            color,
            fail_on,
            all_frames,
            suppressions,
        } => {
            let view = cmd::report::View {
                format,
                top,
                redact,
                filter: report::filter::Filter {
                    pids,
                    programs,
                    excludes,
                    min_bytes,
                },
                window: replay::Window {
                    since_s: since,
                    until_s: until,
                },
                color,
                fail_on,
                all_frames,
                suppressions,
            };
            cmd::report::run(&paths, &view, output.as_deref())
        }
        args::Command::Info { paths } => cmd::info::run(&paths).map(|()| 0),
        args::Command::Completions { shell } => cmd::docs::completions(shell).map(|()| 0),
        args::Command::Man => cmd::docs::man().map(|()| 0),
        args::Command::Bench { output, quick } => cmd::bench::run(output, quick).map(|()| 0),
        args::Command::Diff {
            before,
            after,
            format,
            top,
            min_bytes,
        } => cmd::diff::run(&before, &after, format, top, min_bytes).map(|()| 0),
        args::Command::Export {
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
        } => {
            if let Some(svg) = flamegraph {
                return finish(
                    cmd::export::run_flamegraph(&paths, by, memory, &svg, redact, all_frames)
                        .map(|()| 0),
                );
            }
            if pprof {
                return finish(
                    cmd::export::run_pprof(&paths, memory, output.as_deref(), redact).map(|()| 0),
                );
            }
            let kind = if perfetto {
                cmd::export::Kind::Perfetto
            } else if speedscope {
                cmd::export::Kind::Speedscope(by, memory)
            } else {
                cmd::export::Kind::Collapsed(by, memory)
            };
            cmd::export::run(&paths, kind, output.as_deref(), redact, all_frames).map(|()| 0)
        }
    };
    finish(result)
}

/// The exit status of a subcommand's result; its error, if any, as one line on stderr.
fn finish(result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memshim: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    // JSON goes through serde_json, whose error (often wrapped in an io::Error of kind Other, whose
    // `source` skips it) carries the I/O error's kind.
    let json_pipe = |j: &serde_json::Error| j.io_error_kind() == Some(io::ErrorKind::BrokenPipe);
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>().is_some_and(|io| {
            io.kind() == io::ErrorKind::BrokenPipe
                || io
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<serde_json::Error>())
                    .is_some_and(json_pipe)
        }) || c.downcast_ref::<serde_json::Error>().is_some_and(json_pipe)
    })
}
