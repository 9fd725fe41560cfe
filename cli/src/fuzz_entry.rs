//! The whole report path as one function of a trace's bytes: what the `report` fuzz target and the
//! corpus replay test drive. Every renderer and exporter runs, so that a hostile trace that gets past
//! the reader is also checked against everything that turns its contents into output.
//!
//! Never: panic, hang or allocate without bound on any input (that is what the fuzzer looks for).
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

use crate::args::{CollapsedBy, Memory};
use crate::render::{html::Html, json::Json, markdown::Markdown, text::Text, Render};

/// Replays `bytes` as a trace file, builds the report and renders it in every format and export;
/// returns the bytes rendered, or the error a user would see.
pub fn report_bytes(bytes: &[u8]) -> Result<usize> {
    let path = scratch_path();
    let result = std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(anyhow::Error::from)
        .and_then(|()| report_file(&path));
    let _ = std::fs::remove_file(&path);
    result
}

/// The same for a trace file on disk.
pub fn report_file(path: &Path) -> Result<usize> {
    let replayed = crate::replay::replay(path)?;
    let mut out = Vec::new();
    for by in [CollapsedBy::Leaked, CollapsedBy::Peak] {
        crate::export::collapsed::write(&replayed, by, Memory::Host, &mut out)?;
    }
    crate::export::perfetto::write(std::slice::from_ref(&replayed), &mut out)?;
    let model = crate::report::build::report(vec![replayed]);
    let renderers: [Box<dyn Render>; 4] = [
        Box::new(Text { top: 5 }),
        Box::new(Json),
        Box::new(Markdown::new(5)),
        Box::new(Html),
    ];
    for r in renderers {
        r.render(&model, &mut out)?;
    }
    Ok(out.len())
}

/// A file of this process's own in the temporary directory.
fn scratch_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "memshim-fuzz-{}-{}.mshim",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}
