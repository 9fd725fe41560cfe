//! The stored ceilings: one JSON file per user, one entry per host name.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// What `memshim bench` measured on one host.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Ceilings {
    /// The host they were measured on.
    pub hostname: String,
    /// When, in seconds since the Unix epoch.
    pub measured_unix: u64,
    /// Host memory bandwidth.
    pub host: HostCeilings,
    /// One entry per GPU; empty without one.
    pub gpus: Vec<GpuCeilings>,
}

/// Host memory bandwidth, GB/s (1e9 bytes per second), STREAM triad.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct HostCeilings {
    pub triad_one_thread_gbps: f64,
    pub triad_all_threads_gbps: f64,
    pub threads: usize,
}

/// Copy bandwidth of one GPU, GB/s.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GpuCeilings {
    pub index: i32,
    pub name: String,
    pub htod_pageable_gbps: f64,
    pub htod_pinned_gbps: f64,
    pub dtoh_pageable_gbps: f64,
    pub dtoh_pinned_gbps: f64,
    pub dtod_gbps: f64,
}

impl GpuCeilings {
    /// The ceiling for a (direction, host memory) row of the transfers report.
    pub fn for_row(&self, direction: &str, host_memory: &str) -> Option<f64> {
        match (direction, host_memory) {
            ("HtoD", "pageable") => Some(self.htod_pageable_gbps),
            ("HtoD", "pinned" | "registered") => Some(self.htod_pinned_gbps),
            ("DtoH", "pageable") => Some(self.dtoh_pageable_gbps),
            ("DtoH", "pinned" | "registered") => Some(self.dtoh_pinned_gbps),
            ("DtoD", _) => Some(self.dtod_gbps),
            _ => None,
        }
    }
}

/// Where ceilings are kept: `MEMSHIM_CEILINGS`, else `$XDG_CACHE_HOME/memshim/ceilings.json`, else
/// `~/.cache/memshim/ceilings.json`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MEMSHIM_CEILINGS") {
        return Some(PathBuf::from(p));
    }
    Some(crate::user_files::cache_dir()?.join("ceilings.json"))
}

/// Every host's ceilings in `path` (none when the file does not exist).
pub fn load_all(path: &Path) -> Result<Vec<Ceilings>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is not a memshim ceilings file; remove it and run `memshim bench` again",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Every host's stored ceilings, for a report: read once by the command (a missing or damaged
/// file counts as none).
pub fn stored() -> Vec<Ceilings> {
    default_path()
        .and_then(|path| load_all(&path).ok())
        .unwrap_or_default()
}

/// The ceilings measured on `hostname` among `all`, if any were stored.
pub fn for_host<'a>(all: &'a [Ceilings], hostname: &str) -> Option<&'a Ceilings> {
    all.iter().find(|c| c.hostname == hostname)
}

/// Stores `c`, replacing any earlier entry for its host.
pub fn store(path: &Path, c: &Ceilings) -> Result<()> {
    let mut all = load_all(path)?;
    all.retain(|x| x.hostname != c.hostname);
    all.push(c.clone());
    let text = serde_json::to_string_pretty(&all).context("cannot encode the ceilings")?;
    crate::user_files::replace(path, (text + "\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_replaces_the_entry_of_the_same_host() {
        let dir = std::env::temp_dir().join(format!("memshim-ceilings-{}", std::process::id()));
        let path = dir.join("c.json");
        let mut c = Ceilings {
            hostname: "a".into(),
            measured_unix: 1,
            host: HostCeilings {
                triad_one_thread_gbps: 10.0,
                triad_all_threads_gbps: 20.0,
                threads: 2,
            },
            gpus: Vec::new(),
        };
        store(&path, &c).unwrap();
        c.measured_unix = 2;
        store(&path, &c).unwrap();
        c.hostname = "b".into();
        store(&path, &c).unwrap();
        let all = load_all(&path).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].measured_unix, 2);
        std::fs::write(&path, "garbage").unwrap();
        let err = load_all(&path).unwrap_err().to_string();
        assert!(err.contains("not a memshim ceilings file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
