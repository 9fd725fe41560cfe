//! `memshim top`: find the trace, then show it live until a quit key.
use std::time::Duration;

use anyhow::Result;

use crate::{find_trace, top};

/// Runs the subcommand: `target` is a pid, a trace or a directory (none: the traces here), read
/// every `interval` (checked, see `settings::Top`).
pub fn run(target: Option<&str>, interval: Duration) -> Result<()> {
    let path = find_trace::trace(target)?;
    top::terminal::run(path, interval)
}
