//! Names found offline, kept on disk by build id, so the next run of the same binaries names their
//! frames without reading any DWARF. A Python interpreter's debugging information is compressed and
//! large: decompressing and parsing it was most of `memshim run`'s pass after a short Python command.
//!
//! Where: `MEMSHIM_SYMBOL_CACHE` (a directory; `off` disables it), else `$XDG_CACHE_HOME/memshim/
//! symbols`, else `~/.cache/memshim/symbols`; one file per build id. A build id names one exact
//! binary, so an entry can never be stale. An unreadable or damaged file is ignored (and replaced on
//! the next save): this is a cache, never a source of errors.
//!
//! Never: keep more than [`MAX_ENTRIES`] addresses per binary, or write anywhere but its own directory
//! (files are replaced as `user_files` replaces them: private, whole, never through a symlink).
use std::path::PathBuf;

use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// Addresses kept per binary.
const MAX_ENTRIES: usize = 1 << 19;

/// One frame as cached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cached {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

#[derive(Default, Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    /// (module-relative probe address, frames, innermost first).
    entries: Vec<(u64, Vec<Cached>)>,
}

const VERSION: u32 = 1;

#[derive(Default)]
struct Binary {
    entries: HashMap<u64, Vec<Cached>>,
    dirty: bool,
}

/// The cache, loaded per binary on first use.
pub struct DiskCache {
    dir: Option<PathBuf>,
    binaries: HashMap<Vec<u8>, Binary>,
}

impl Default for DiskCache {
    fn default() -> Self {
        DiskCache {
            dir: default_dir(),
            binaries: HashMap::default(),
        }
    }
}

fn default_dir() -> Option<PathBuf> {
    match std::env::var_os("MEMSHIM_SYMBOL_CACHE") {
        Some(v) if v == "off" || v == "0" => return None,
        Some(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    Some(crate::user_files::cache_dir()?.join("symbols"))
}

fn file_name(build_id: &[u8]) -> String {
    format!("{}.json", crate::user_files::build_id_hex(build_id))
}

impl DiskCache {
    /// A cache kept in `dir`, or none.
    #[cfg(test)]
    pub fn at(dir: Option<PathBuf>) -> DiskCache {
        DiskCache {
            dir,
            binaries: HashMap::default(),
        }
    }

    fn binary(&mut self, build_id: &[u8]) -> Option<&mut Binary> {
        if build_id.is_empty() {
            return None;
        }
        let dir = self.dir.as_ref()?;
        if !self.binaries.contains_key(build_id) {
            let loaded = std::fs::read(dir.join(file_name(build_id)))
                .ok()
                .and_then(|b| serde_json::from_slice::<OnDisk>(&b).ok())
                .filter(|d| d.version == VERSION)
                .map(|d| d.entries.into_iter().collect())
                .unwrap_or_default();
            self.binaries.insert(
                build_id.to_vec(),
                Binary {
                    entries: loaded,
                    dirty: false,
                },
            );
        }
        self.binaries.get_mut(build_id)
    }

    /// The cached frames of `probe` in the binary `build_id`.
    pub fn get(&mut self, build_id: &[u8], probe: u64) -> Option<Vec<Cached>> {
        self.binary(build_id)?.entries.get(&probe).cloned()
    }

    /// Remembers what `probe` resolved to (an empty list too: nothing to find there).
    pub fn put(&mut self, build_id: &[u8], probe: u64, frames: Vec<Cached>) {
        if let Some(b) = self.binary(build_id) {
            if b.entries.len() < MAX_ENTRIES {
                b.entries.insert(probe, frames);
                b.dirty = true;
            }
        }
    }

    /// Writes the binaries that learned something. Failures are ignored: the cache is optional.
    pub fn save(&mut self) {
        let Some(dir) = self.dir.clone() else { return };
        for (id, b) in self.binaries.iter_mut().filter(|(_, b)| b.dirty) {
            let mut entries: Vec<(u64, Vec<Cached>)> =
                b.entries.iter().map(|(&k, v)| (k, v.clone())).collect();
            entries.sort_by_key(|e| e.0);
            let Ok(bytes) = serde_json::to_vec(&OnDisk {
                version: VERSION,
                entries,
            }) else {
                continue;
            };
            if crate::user_files::replace(&dir.join(file_name(id)), &bytes).is_ok() {
                b.dirty = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_save_and_a_damaged_file_is_ignored() {
        let dir = std::env::temp_dir().join(format!("memshim-symcache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let frame = Cached {
            function: Some("main".into()),
            file: Some("a.c".into()),
            line: Some(3),
        };
        let mut c = DiskCache::at(Some(dir.clone()));
        assert_eq!(c.get(b"\x01\x02", 0x10), None);
        c.put(b"\x01\x02", 0x10, vec![frame.clone()]);
        c.put(b"\x01\x02", 0x20, vec![]);
        c.put(b"", 0x30, vec![frame.clone()]); // no build id: never cached
        c.save();
        let mut again = DiskCache::at(Some(dir.clone()));
        assert_eq!(again.get(b"\x01\x02", 0x10), Some(vec![frame]));
        assert_eq!(again.get(b"\x01\x02", 0x20), Some(vec![]));
        assert_eq!(again.get(b"", 0x30), None);
        std::fs::write(dir.join(file_name(b"\x01\x02")), b"{not json").unwrap();
        assert_eq!(
            DiskCache::at(Some(dir.clone())).get(b"\x01\x02", 0x10),
            None
        );
        assert_eq!(DiskCache::at(None).get(b"\x01\x02", 0x10), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
