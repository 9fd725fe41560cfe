//! `memshim top`: find the trace, then show it live until a quit key.
use std::time::Duration;

use anyhow::Result;

use crate::{find_trace, top};

/// Runs the subcommand: `target` is a pid, a trace or a directory (none: the traces here), read
/// every `interval` (checked, see `settings::Top`).
pub fn run(target: Option<&str>, interval: Duration) -> Result<()> {
    let path = find_trace::trace(target)?;
    // A trace file is followed as named; a directory or a pid may come to name a newer trace.
    let named = target.map(str::to_string);
    let again: Option<top::terminal::Retarget> = match target {
        Some(t) if std::path::Path::new(t).is_file() => None,
        _ => Some(Box::new(move || find_trace::trace(named.as_deref()).ok())),
    };
    top::terminal::run(path, again, interval)
}
