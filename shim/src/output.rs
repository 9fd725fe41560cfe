//! Where a process's trace file goes and how it is named: `<dir>/<exe>.<pid>[.<n>].mshim`, created
//! with mode 0600, never following or replacing anything already at that path.
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use memshim_trace::FILE_EXTENSION;

use crate::rank::host_for_file_name;
use crate::sys;

/// The open trace file. Before each write it checks that its descriptor still refers to the file it
/// created: a program that closes every descriptor (a daemon) and opens one of its own may be given
/// the same number, and the shim must never write into the program's file.
pub struct TraceFile {
    file: File,
    dev: u64,
    ino: u64,
}

impl TraceFile {
    fn new(file: File) -> io::Result<TraceFile> {
        let m = file.metadata()?;
        Ok(TraceFile {
            dev: m.dev(),
            ino: m.ino(),
            file,
        })
    }

    fn still_ours(&self) -> io::Result<()> {
        match self.file.metadata() {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => Ok(()),
            _ => Err(io::Error::other(
                "the program closed the trace file's descriptor (and may have reused it); nothing more is written",
            )),
        }
    }
}

impl Write for TraceFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.still_ours()?;
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Creates the trace file for `pid` (named `exe.pid.mshim`, or `exe.host.rankN.pid.mshim` for a
/// rank of a distributed job, so the traces of a job's hosts can share a directory); returns it and
/// its path.
pub fn create(
    dir: &str,
    exe: &str,
    pid: u32,
    rank: Option<(&str, u32)>,
) -> Result<(TraceFile, PathBuf), String> {
    let dir = if dir.is_empty() {
        std::env::current_dir().map_err(|e| format!("cannot find the current directory: {e}"))?
    } else {
        PathBuf::from(dir)
    };
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
                let file = TraceFile::new(File::from(fd))
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
        let (mut f, path) = create(dir.to_str().unwrap(), "/bin/prog", 7, None).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(path, dir.join("prog.7.1.mshim"));
        let (_, ranked) = create(
            dir.to_str().unwrap(),
            "/bin/prog",
            7,
            Some(("gpu3.site", 5)),
        )
        .unwrap();
        assert_eq!(ranked, dir.join("prog.gpu3.rank5.7.mshim"));
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(meta.file_type().is_file());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(meta.nlink(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod reuse_tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_reused_descriptor_is_never_written() {
        let dir = std::env::temp_dir().join(format!("memshim-reuse-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (mut f, _path) = create(dir.to_str().unwrap(), "/bin/prog", 8, None).unwrap();
        // The program closes the descriptor and opens its own file, which gets the same number.
        let fd = f.file.as_raw_fd();
        let other = dir.join("program.log");
        std::fs::write(&other, b"log\n").unwrap();
        let theirs = File::options().append(true).open(&other).unwrap();
        // SAFETY: test-only: dup2 onto our own descriptor, as a daemon's close-and-open would.
        #[allow(unsafe_code)]
        unsafe {
            libc::dup2(theirs.as_raw_fd(), fd)
        };
        let err = f.write_all(b"frame").unwrap_err();
        assert!(err.to_string().contains("closed the trace file"), "{err}");
        assert_eq!(std::fs::read(&other).unwrap(), b"log\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
