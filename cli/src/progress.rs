//! A progress bar for long replays: shown on a terminal for traces of more than 32 MiB, never when
//! standard error is a pipe or a file (CI logs, `2>file`), where it would only add noise.
use std::fs::File;
use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

/// Traces smaller than this replay too fast to need a bar.
const MIN_BYTES: u64 = 32 << 20;

/// A bar over the bytes of `file`, or a hidden one.
pub fn for_file(path: &Path, file: &File) -> ProgressBar {
    let len = file.metadata().map_or(0, |m| m.len());
    if len < MIN_BYTES || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    bar.set_message(format!("reading {name}"));
    bar
}
