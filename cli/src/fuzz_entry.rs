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
    let model = crate::report::build::report(vec![replayed], &crate::bench::ceilings::stored());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The files of `fuzz/<kind>/report`.
    fn files(kind: &str) -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz")
            .join(kind)
            .join("report");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|e| e.expect("an entry").path())
            .collect();
        files.sort();
        files
    }

    #[test]
    fn the_report_corpus_replays_through_every_renderer() {
        // The committed seeds (real traces) must report in every format; every input the fuzzer
        // found (the corpus) must end, without a panic, quickly.
        let seeds = files("seeds");
        let found = files("corpus");
        assert!(seeds.len() >= 10, "{} seeds", seeds.len());
        assert!(found.len() >= 10, "{} inputs found", found.len());
        for path in &seeds {
            let n = report_file(path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            assert!(n > 1000, "{}: {n} bytes rendered", path.display());
        }
        for path in &found {
            let bytes = std::fs::read(path).expect("a corpus file");
            // Most are damaged and give an error; what matters is that they end, quickly.
            ends_quickly(&bytes, || path.display().to_string());
        }
    }

    /// The report of `input` ends (without a panic) within five seconds; `what` names it if not.
    fn ends_quickly(input: &[u8], what: impl Fn() -> String) {
        let start = Instant::now();
        let _ = report_bytes(input);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "{} took {took:?}", what());
    }

    /// The short fuzz pass of the report path: mutations of every seed (see
    /// `memshim_trace::fuzz_mutate`) through replay, every analysis and every renderer, each of which
    /// must end without a panic, quickly.
    #[test]
    fn mutated_traces_report_or_fail_cleanly() {
        for (i, path) in files("seeds").iter().enumerate() {
            let bytes = std::fs::read(path).expect("a seed");
            for round in 0..200u64 {
                let seed = (i as u64) << 32 | round;
                let input = memshim_trace::fuzz_mutate::Mutator::new(seed).mutate(&bytes);
                ends_quickly(&input, || {
                    format!("{} mutated with seed {seed}", path.display())
                });
            }
        }
    }
}
