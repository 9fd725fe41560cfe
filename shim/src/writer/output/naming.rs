//! Where a process's trace file goes and how it is named: `<dir>/<exe>.<pid>[.<n>].mshim`, created
//! with mode 0600, never following or replacing anything already at that path.
use std::ffi::CString;
use std::path::{Path, PathBuf};

use memshim_trace::FILE_EXTENSION;

use super::TraceFile;
use crate::rank::host_for_file_name;
use crate::sys;

/// Creates the trace file for `pid` (named `exe.pid.mshim`, or `exe.host.rankN.pid.mshim` for a
/// rank of a distributed job, so the traces of a job's hosts can share a directory); returns it and
/// its path.
pub fn create(
    dir: &str,
    exe: &str,
    pid: u32,
    rank: Option<(&str, u32)>,
) -> Result<(TraceFile, PathBuf), String> {
    let dir = crate::config::absolute_dir(dir)?;
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create the output directory {}: {e}", dir.display()))?;
    }
    let stem = match rank {
        Some((host, r)) => format!("{}.{}.rank{r}", file_stem(exe), host_for_file_name(host)),
        None => file_stem(exe),
    };
    for n in 0..1000 {
        let name = if n == 0 {
            format!("{stem}.{pid}.{FILE_EXTENSION}")
        } else {
            format!("{stem}.{pid}.{n}.{FILE_EXTENSION}")
        };
        let path = dir.join(name);
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("the output path {} contains a NUL byte", path.display()))?;
        match sys::create_exclusive(&c) {
            Ok(fd) => {
                let file = TraceFile::new(c, fd)
                    .map_err(|e| format!("cannot use the trace file {}: {e}", path.display()))?;
                return Ok((file, path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create the trace file {}: {e}",
                    path.display()
                ))
            }
        }
    }
    Err(format!(
        "cannot create a trace file in {}: 1000 names for pid {pid} are taken",
        dir.display()
    ))
}

/// A file-name-safe short form of the executable's name.
pub fn file_stem(exe: &str) -> String {
    let base = Path::new(exe)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if clean.is_empty() {
        "process".into()
    } else {
        clean
    }
}
