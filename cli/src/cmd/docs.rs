//! `memshim completions SHELL` and `memshim man`: the command line's own description, generated
//! from its clap definition so it can never disagree with it.
use std::io::{self, Write};

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::args::Cli;

/// Writes the completion script for `shell` to standard output.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut out = io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "memshim", &mut out);
    out.flush().context("cannot write the completions")
}

/// Writes the manual page, with a section per subcommand, to standard output.
pub fn man() -> Result<()> {
    let cmd = Cli::command();
    let mut out = io::stdout().lock();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .context("cannot write the manual page")?;
    for sub in cmd.get_subcommands() {
        let name = format!("memshim-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone().bin_name(name.clone()))
            .title(name)
            .render(&mut out)
            .context("cannot write the manual page")?;
    }
    out.flush().context("cannot write the manual page")
}
