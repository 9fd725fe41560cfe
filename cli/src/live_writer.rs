//! Whether a trace without its end is still being written, rather than left by a process that was
//! killed or crashed.
//!
//! The rule: the trace's header names this machine, a process with the header's pid is running,
//! and that process holds the trace file open (one of its descriptors, or a mapping, is the same
//! file: same device and inode). A reused pid holds some other file, so it is never taken for the
//! writer. When the process's descriptors cannot be read (it belongs to another user), a file
//! modified within the last [`RECENT`] counts as being written: the shim writes at least every
//! 100 ms while the program allocates.
//!
//! Never: guess from the pid alone, or look at any process but the header's.
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use memshim_trace::Header;

/// How recent a modification must be to count when the writer's descriptors cannot be seen.
pub const RECENT: Duration = Duration::from_secs(5);

/// True when `path`'s writer (the process of `header`) is running and has it open.
pub fn is_writing(path: &Path, header: &Header) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if header.pid == 0 || !same_host(&header.hostname) {
        return false;
    }
    let proc_dir = Path::new("/proc").join(header.pid.to_string());
    if !proc_dir.exists() {
        return false;
    }
    let id = (meta.dev(), meta.ino());
    match holds_open(&proc_dir, id) {
        Some(held) => held,
        None => meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age <= RECENT),
    }
}

/// Whether the process at `proc_dir` has the file `id` open or mapped; `None` when that cannot be
/// seen (its descriptors are not ours to read).
fn holds_open(proc_dir: &Path, id: (u64, u64)) -> Option<bool> {
    let fds = std::fs::read_dir(proc_dir.join("fd")).ok()?;
    for fd in fds.flatten() {
        if let Ok(m) = std::fs::metadata(fd.path()) {
            if (m.dev(), m.ino()) == id {
                return Some(true);
            }
        }
    }
    // A shared mapping of the trace stays after its descriptor is closed.
    let maps = std::fs::read_to_string(proc_dir.join("maps")).unwrap_or_default();
    Some(maps.lines().any(|l| maps_line_is(l, id)))
}

/// True when a `/proc/PID/maps` line maps the file `id` (`dev` as `major:minor` in hex, then inode).
fn maps_line_is(line: &str, (dev, ino): (u64, u64)) -> bool {
    let mut cols = line.split_whitespace().skip(3);
    let (Some(d), Some(i)) = (cols.next(), cols.next()) else {
        return false;
    };
    let Some((major, minor)) = d.split_once(':') else {
        return false;
    };
    let (Ok(major), Ok(minor), Ok(i)) = (
        u64::from_str_radix(major, 16),
        u64::from_str_radix(minor, 16),
        i.parse::<u64>(),
    ) else {
        return false;
    };
    i == ino && major == libc::major(dev) as u64 && minor == libc::minor(dev) as u64
}

/// True when `name` is this machine's host name.
fn same_host(name: &str) -> bool {
    std::fs::read_to_string("/proc/sys/kernel/hostname").is_ok_and(|h| h.trim() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(pid: u32) -> Header {
        Header {
            pid,
            ppid: 0,
            exe: String::new(),
            argv: Vec::new(),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap()
                .trim()
                .to_string(),
            start_unix_ns: 0,
            clock: memshim_trace::Clock::Monotonic,
            clock_start_ns: 0,
            page_size: 4096,
            shim_version: String::new(),
            stack_depth: 64,
            forked: false,
        }
    }

    #[test]
    fn a_file_this_process_holds_open_is_being_written_and_one_it_closed_is_not() {
        let path = std::env::temp_dir().join(format!("memshim-live-{}.mshim", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let me = header(std::process::id());
        assert!(is_writing(&path, &me));
        let mut elsewhere = me.clone();
        elsewhere.hostname = "another-host.invalid".into();
        assert!(!is_writing(&path, &elsewhere), "another machine's process");
        drop(file);
        assert!(
            !is_writing(&path, &me),
            "closed: its writer is done with it"
        );
        // pid 1 is running but never holds our file (or cannot be looked at and the file is
        // recent, which the rule then accepts; only check the case that can be seen).
        if std::fs::read_dir("/proc/1/fd").is_ok() {
            assert!(!is_writing(&path, &header(1)));
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_maps_line_is_matched_by_device_and_inode() {
        let dev = libc::makedev(0x103, 0x2);
        let line = "7f00-7f10 rw-s 00000000 103:02 123456  /tmp/t/prog.1.mshim";
        assert!(maps_line_is(line, (dev, 123456)));
        assert!(!maps_line_is(line, (dev, 123457)));
        assert!(!maps_line_is(
            "7f00-7f10 r-xp 00000000 00:00 0 ",
            (dev, 123456)
        ));
    }
}
