//! Finding trace files: paths given on the command line may be files or directories of them.
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use memshim_trace::FILE_EXTENSION;

/// The trace files named by `paths`, directories expanded (sorted by name).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read {}", p.display()))?;
        if meta.is_dir() {
            let found = in_dir(p)?;
            if found.is_empty() {
                bail!(
                    "{} holds no memshim traces (*.{FILE_EXTENSION}); run a program with `memshim run -o {} -- ...` first",
                    p.display(),
                    p.display()
                );
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The trace files directly inside `dir`, sorted by name.
pub fn in_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("cannot list {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == FILE_EXTENSION) && path.is_file() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}
