//! `memshim`: runs programs under the shim and replays their traces into reports.
//!
//! Exit codes: `run` returns the traced command's status (128 + signal when it was killed); the
//! other subcommands return 0 on success and 1 on error, printed as one `memshim: ...` line with its
//! whole cause chain. With `--fail-on`, `report` and `run` (when the command itself succeeded)
//! return 3 when a limit is broken. A closed output pipe (`memshim report ... | head`) is not an error.
use memshim_cli::settings::Settings;
use memshim_cli::{args, cmd};

use std::io;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    finish(Settings::try_from(cli.command).and_then(run))
}

/// Runs the subcommand; returns its exit status.
fn run(settings: Settings) -> anyhow::Result<u8> {
    match settings {
        Settings::Run(s) => cmd::run::run(
            s.output,
            s.quiet,
            s.python_malloc,
            s.sample,
            &cmd::run::Gate {
                limits: s.fail_on,
                suppressions: s.suppressions,
            },
            s.command,
        ),
        Settings::Attach(s) => cmd::attach::run(s.pid, s.duration, s.output, s.quiet),
        Settings::Top(s) => cmd::top::run(s.target.as_deref(), s.interval).map(|()| 0),
        Settings::Snapshot(s) => cmd::snapshot::run(s.pid, s.format, s.top, s.output, s.quiet),
        Settings::Report(s) => cmd::report::run(&s.paths, &s.view, s.output.as_deref()),
        Settings::Info(s) => cmd::info::run(&s.paths).map(|()| 0),
        Settings::Completions(shell) => cmd::docs::completions(shell).map(|()| 0),
        Settings::Man => cmd::docs::man().map(|()| 0),
        Settings::Bench(s) => cmd::bench::run(s.output, s.quick).map(|()| 0),
        Settings::Diff(s) => {
            cmd::diff::run(&s.before, &s.after, s.format, s.top, s.min_bytes).map(|()| 0)
        }
        Settings::Export(s) => cmd::export::run(&s).map(|()| 0),
    }
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
