//! Which trace `memshim top` and `memshim snapshot` read: the one a trace path names, the one
//! being written in a directory, or a running process's own, found from what the process holds
//! open (the shim keeps its trace open while it writes) or, where its descriptors cannot be read,
//! by the pid in the headers of the traces in `memshim run`'s default output directories here.
//!
//! Never: guess by file name alone, or pick a trace whose header names another process.
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use memshim_trace::{Header, TraceReader, FILE_EXTENSION};

use crate::live_writer;

/// How deep below a pid to look for the traced process: `memshim run`'s pid has the program as
/// its child, and a launcher (a shell script, `python -m`) one more below.
const CHILD_DEPTH: usize = 2;

/// The trace that `target` (a pid, a trace, a directory of traces; none: the directories here)
/// names.
pub fn trace(target: Option<&str>) -> Result<PathBuf> {
    let Some(target) = target else {
        return in_default_dirs(Path::new("."), None);
    };
    let path = Path::new(target);
    if path.exists() {
        return if path.is_dir() {
            in_dir(path)
        } else {
            // Read now, so that a file that is not a trace is said at once, not on the screen.
            header(path)?;
            Ok(path.to_path_buf())
        };
    }
    match target.parse::<u32>() {
        Ok(pid) if pid > 0 => of_pid(pid),
        _ => bail!("{target} is neither a process id nor a trace file or directory"),
    }
}

/// The trace of the process `pid`.
pub fn of_pid(pid: u32) -> Result<PathBuf> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if !proc_dir.exists() {
        bail!("no process {pid} is running (give its trace's directory to see what it wrote)");
    }
    if let Some(found) = open_trace(&proc_dir, CHILD_DEPTH) {
        return Ok(found);
    }
    in_default_dirs(Path::new("."), Some(pid)).map_err(|_| {
        let name = std::fs::read_to_string(proc_dir.join("comm")).unwrap_or_default();
        anyhow::anyhow!(
            "process {pid} ({}) is not writing a memshim trace that can be found: it holds no .{FILE_EXTENSION} file open (or its descriptors are not ours to read) and no ./memshim-* directory here holds its trace; start it with `memshim run`, or attach with `memshim attach {pid}`, or give `memshim top` the trace's directory",
            name.trim()
        )
    })
}

/// A trace file the process at `proc_dir` (or a child, down to `depth` levels) holds open.
fn open_trace(proc_dir: &Path, depth: usize) -> Option<PathBuf> {
    let held = std::fs::read_dir(proc_dir.join("fd")).ok().and_then(|fds| {
        fds.flatten().find_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?;
            let is_trace = target.extension().is_some_and(|e| e == FILE_EXTENSION)
                && target.is_file()
                && header(&target).is_ok();
            is_trace.then_some(target)
        })
    });
    if held.is_some() || depth == 0 {
        return held;
    }
    children(proc_dir)
        .into_iter()
        .find_map(|c| open_trace(&PathBuf::from(format!("/proc/{c}")), depth - 1))
}

/// The pids of the children of the process at `proc_dir`, of all its threads.
fn children(proc_dir: &Path) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(proc_dir.join("task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The trace of `dir` to follow: of those being written, the one whose process started last;
/// when none is, the last to start.
pub fn in_dir(dir: &Path) -> Result<PathBuf> {
    let found = crate::traces::in_dir(dir)?;
    if found.is_empty() {
        bail!(
            "{} holds no memshim traces (*.{FILE_EXTENSION}); start the program with `memshim run -o {} -- ...` first",
            dir.display(),
            dir.display()
        );
    }
    pick(found.into_iter(), None)
        .with_context(|| format!("none of the traces in {} can be read", dir.display()))
}

/// A trace in `cwd` or in its `memshim-*` directories (`run`'s and `attach`'s default output):
/// of process `pid` when given, else any being written.
fn in_default_dirs(cwd: &Path, pid: Option<u32>) -> Result<PathBuf> {
    let mut dirs = vec![cwd.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(cwd) {
        dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("memshim-"))
        }));
    }
    let files = dirs
        .iter()
        .filter_map(|d| crate::traces::in_dir(d).ok())
        .flatten();
    match pick(files, pid) {
        Some(found) if pid.is_some() || is_writing(&found) => Ok(found),
        _ => bail!(
            "no memshim trace is being written here or in a ./memshim-* directory; name a process id, a trace or its directory"
        ),
    }
}

/// Of `files`, those of `pid` if given: the last to start of those being written, else the last
/// to start.
fn pick(files: impl Iterator<Item = PathBuf>, pid: Option<u32>) -> Option<PathBuf> {
    let mut read: Vec<(bool, u64, PathBuf)> = files
        .filter_map(|f| {
            let h = header(&f).ok()?;
            if pid.is_some_and(|p| p != h.pid) {
                return None;
            }
            Some((live_writer::is_writing(&f, &h), h.start_unix_ns, f))
        })
        .collect();
    read.sort();
    read.pop().map(|(_, _, f)| f)
}

fn is_writing(path: &Path) -> bool {
    header(path).is_ok_and(|h| live_writer::is_writing(path, &h))
}

/// The header of the trace at `path`.
pub fn header(path: &Path) -> Result<Header> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let reader = TraceReader::new(BufReader::new(file))
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(reader.header().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memshim_trace::{Clock, TraceWriter};

    fn write_trace(path: &Path, pid: u32, start_unix_ns: u64) {
        let header = Header {
            pid,
            ppid: 1,
            exe: "/bin/prog".into(),
            argv: vec!["prog".into()],
            hostname: "elsewhere".into(),
            start_unix_ns,
            clock: Clock::Monotonic,
            clock_start_ns: 0,
            page_size: 4096,
            shim_version: "test".into(),
            stack_depth: 64,
            forked: false,
        };
        let file = File::create(path).expect("create a trace");
        TraceWriter::new(file, &header, None)
            .and_then(TraceWriter::finish)
            .expect("a header");
    }

    #[test]
    fn a_directory_gives_its_last_started_trace_and_a_pid_its_own() {
        let dir = std::env::temp_dir().join(format!("memshim-top-find-{}", std::process::id()));
        let runs = dir.join("memshim-prog-1");
        std::fs::create_dir_all(&runs).unwrap();
        write_trace(&runs.join("prog.10.mshim"), 10, 100);
        write_trace(&runs.join("prog.11.mshim"), 11, 200);
        std::fs::write(runs.join("notes.txt"), "not a trace").unwrap();
        assert_eq!(in_dir(&runs).unwrap(), runs.join("prog.11.mshim"));
        assert_eq!(
            in_default_dirs(&dir, Some(10)).unwrap(),
            runs.join("prog.10.mshim")
        );
        let none = in_default_dirs(&dir, Some(12)).unwrap_err().to_string();
        assert!(none.contains("no memshim trace"), "{none}");
        // Neither is being written (their host is another machine).
        assert!(in_default_dirs(&dir, None).is_err());
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let err = in_dir(&empty).unwrap_err().to_string();
        assert!(err.contains("holds no memshim traces"), "{err}");
        let err = trace(Some("no such thing")).unwrap_err().to_string();
        assert_eq!(
            err,
            "no such thing is neither a process id nor a trace file or directory"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_pid_that_runs_no_trace_is_said_so() {
        let err = of_pid(u32::MAX - 1).unwrap_err().to_string();
        assert!(err.starts_with("no process 4294967294 is running"), "{err}");
        // This test's own process writes no trace.
        let me = std::process::id();
        let err = of_pid(me).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("process {me} (")) && err.contains("memshim attach"),
            "{err}"
        );
    }
}
