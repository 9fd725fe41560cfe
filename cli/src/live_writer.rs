//! Whether a trace without its end is still being written, rather than left by a process that was
//! killed or crashed.
//!
//! The rule: the trace's header names this machine, a process with the header's pid is running, and
//! it is the trace's own process, not a later one that reused the pid: it holds the trace file open
//! (one of its descriptors, or a mapping, is the same file: same device and inode), or it started no
//! later than the trace did (its start time, from `/proc/PID/stat`, is at most [`SLACK`] after the
//! header's; a process that reused the pid started after the trace's process had ended). The start
//! time decides when the descriptors cannot be read (another user's process) or the shim holds none
//! for a moment.
//!
//! Never: guess from the pid alone, or look at any process but the header's.
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use memshim_trace::Header;

/// How much later than the trace's start its process may seem to have started: the kernel's start
/// time has a resolution of 1/100 s and the boot time one second.
pub const SLACK_NS: u64 = 2_000_000_000;

/// True when `path`'s writer (the process of `header`) is still running.
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
    holds_open(&proc_dir, (meta.dev(), meta.ino()))
        || start_unix_ns(&proc_dir)
            .is_some_and(|started| started <= header.start_unix_ns.saturating_add(SLACK_NS))
}

/// When the process at `proc_dir` started, in nanoseconds since the Unix epoch: the boot time
/// (`btime` of `/proc/stat`) plus its start time in clock ticks (`/proc/PID/stat` field 22; the
/// kernel's USER_HZ is 100 on Linux).
fn start_unix_ns(proc_dir: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let btime: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(btime * 1_000_000_000 + ticks * 10_000_000)
}

/// Whether the process at `proc_dir` has the file `id` open or mapped (false when that cannot be
/// seen: its descriptors are not ours to read).
fn holds_open(proc_dir: &Path, id: (u64, u64)) -> bool {
    let held = std::fs::read_dir(proc_dir.join("fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == id))
    });
    // A shared mapping of the trace stays after its descriptor is closed.
    held || std::fs::read_to_string(proc_dir.join("maps"))
        .is_ok_and(|maps| maps.lines().any(|l| maps_line_is(l, id)))
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
    fn the_running_process_that_wrote_a_trace_is_its_writer_and_a_later_one_is_not() {
        let path = std::env::temp_dir().join(format!("memshim-live-{}.mshim", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let mut me = header(std::process::id());
        me.start_unix_ns = now;
        assert!(is_writing(&path, &me), "holds it open");
        let mut elsewhere = me.clone();
        elsewhere.hostname = "another-host.invalid".into();
        assert!(!is_writing(&path, &elsewhere), "another machine's process");
        drop(file);
        assert!(
            is_writing(&path, &me),
            "closed, but running since before the trace began"
        );
        // A trace that began before this process did was written by an earlier one with its pid.
        let mut earlier = me.clone();
        earlier.start_unix_ns = 1_000_000_000;
        assert!(!is_writing(&path, &earlier));
        // A pid that no process has.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        assert!(!is_writing(&path, &header(pid)));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn this_process_started_a_moment_ago_by_its_own_clock() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let started = start_unix_ns(Path::new("/proc/self")).expect("a start time");
        assert!(started <= now + SLACK_NS, "{started} after {now}");
        assert!(
            now - started < 3600 * 1_000_000_000,
            "the test started within the hour"
        );
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
