//! Where a process's trace file goes and how it is named: `<dir>/<exe>.<pid>[.<n>].mshim`, created
//! with mode 0600, never following or replacing anything already at that path.
use std::ffi::CString;
use std::fs::File;
use std::path::{Path, PathBuf};

use memshim_trace::FILE_EXTENSION;

use crate::sys;

/// Creates the trace file for `pid`; returns it and its path.
pub fn create(dir: &str, exe: &str, pid: u32) -> Result<(File, PathBuf), String> {
    let dir = if dir.is_empty() {
        std::env::current_dir().map_err(|e| format!("cannot find the current directory: {e}"))?
    } else {
        PathBuf::from(dir)
    };
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create the output directory {}: {e}", dir.display()))?;
    }
    let stem = file_stem(exe);
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
            Ok(fd) => return Ok((File::from(fd), path)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn stems() {
        assert_eq!(file_stem("/usr/bin/python3.12"), "python3.12");
        assert_eq!(file_stem("/x/we ird$name"), "we_ird_name");
        assert_eq!(file_stem(""), "process");
    }

    #[test]
    fn creates_0600_and_never_follows_a_planted_symlink() {
        let dir = std::env::temp_dir().join(format!("memshim-output-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("prog.7.mshim")).unwrap();
        let (_f, path) = create(dir.to_str().unwrap(), "/bin/prog", 7).unwrap();
        assert_eq!(path, dir.join("prog.7.1.mshim"));
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(meta.file_type().is_file());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(meta.nlink(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
