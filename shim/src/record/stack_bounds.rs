//! Where the calling thread's stack ends, read without taking any lock a traced thread may hold.
//!
//! `pthread_getattr_np` holds the thread's own lock while it `realloc`s (and, for the main thread,
//! `fopen`s `/proc/self/maps`): a thread that calls it before its first allocation (every Rust
//! program at start, the JVM for each of its threads) would re-enter it from the shim's hook and wait
//! on the lock it holds itself. So the bounds come from the kernel instead: the mapping of
//! `/proc/self/maps` that holds the stack pointer, read with plain system calls into a buffer on the
//! stack (no `FILE`, no allocation). The main thread's stack grows on demand, so its lowest address
//! is its top less `RLIMIT_STACK`.
//!
//! Never: allocate, lock, or use stdio here; this runs on the allocation path, once per thread.

/// A reader of `/proc/self/maps` lines that never allocates: `line` gets each whole line in turn.
fn for_each_maps_line(mut line: impl FnMut(&[u8]) -> bool) -> Option<()> {
    let fd = crate::sys::RawFile::open_read(c"/proc/self/maps")?;
    // One line is at most about 100 bytes plus the path (PATH_MAX at the very most); a line longer
    // than the buffer is skipped, which only loses a mapping with an absurd path.
    let mut buf = [0u8; 2048];
    let mut have = 0usize;
    let mut skipping = false;
    loop {
        let n = fd.read(&mut buf[have..])?;
        if n == 0 {
            if have > 0 && !skipping {
                line(&buf[..have]);
            }
            return Some(());
        }
        have += n;
        let mut start = 0;
        while let Some(p) = buf[start..have].iter().position(|&b| b == b'\n') {
            let end = start + p;
            if !skipping && !line(&buf[start..end]) {
                return Some(());
            }
            skipping = false;
            start = end + 1;
        }
        if start == 0 && have == buf.len() {
            // A line longer than the buffer: drop what we have and skip to its end.
            skipping = true;
            have = 0;
        } else {
            buf.copy_within(start..have, 0);
            have -= start;
        }
    }
}

/// Parses the `lo-hi` range that opens a maps line.
fn range_of(line: &[u8]) -> Option<(usize, usize)> {
    let dash = line.iter().position(|&b| b == b'-')?;
    let space = line.iter().position(|&b| b == b' ')?;
    if space < dash {
        return None;
    }
    Some((hex(&line[..dash])?, hex(&line[dash + 1..space])?))
}

fn hex(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    s.iter().try_fold(0usize, |acc, &b| {
        let d = (b as char).to_digit(16)?;
        Some(acc << 4 | d as usize)
    })
}

/// The mapping that holds `addr`, as `(lo, hi)`.
fn mapping_of(addr: usize) -> Option<(usize, usize)> {
    let mut found = None;
    for_each_maps_line(|line| match range_of(line) {
        Some((lo, hi)) if lo <= addr && addr < hi => {
            found = Some((lo, hi));
            false
        }
        // Lines are sorted by address: past `addr` it cannot come.
        Some((lo, _)) if lo > addr => false,
        _ => true,
    })?;
    found
}

/// The lowest address the calling thread's stack may reach, `None` when it cannot be told (an
/// unlimited main-thread stack, or `/proc` unreadable).
pub fn stack_low(here: usize, main_thread: bool) -> Option<usize> {
    let (lo, hi) = mapping_of(here)?;
    if !main_thread {
        return Some(lo);
    }
    let limit = crate::sys::stack_rlimit()?;
    Some(
        hi.saturating_sub(limit)
            .max(crate::sys::page_size() as usize),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges() {
        assert_eq!(
            range_of(b"7ffd1000-7ffd3000 rw-p 00000000 00:00 0   [stack]"),
            Some((0x7ffd_1000, 0x7ffd_3000))
        );
        assert_eq!(range_of(b"garbage"), None);
        assert_eq!(range_of(b"12 34-56"), None);
    }

    #[test]
    fn finds_this_threads_stack() {
        let here = 0u8;
        let addr = &here as *const u8 as usize;
        let (lo, hi) = mapping_of(addr).expect("the stack is mapped");
        assert!(lo <= addr && addr < hi);
        let t = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let x = 0u8;
                let a = &x as *const u8 as usize;
                let low = stack_low(a, false).expect("a thread stack has a mapping");
                (a, low)
            })
            .unwrap();
        let (a, low) = t.join().unwrap();
        assert!(low < a && a - low <= 256 << 10, "{a:#x} {low:#x}");
    }

    #[test]
    fn every_line_is_seen_once() {
        let mut n = 0;
        for_each_maps_line(|l| {
            assert!(range_of(l).is_some(), "{:?}", String::from_utf8_lossy(l));
            n += 1;
            true
        })
        .unwrap();
        let whole = std::fs::read_to_string("/proc/self/maps").unwrap();
        // Mappings can come and go between the two reads (the test harness's threads).
        assert!((n as isize - whole.lines().count() as isize).abs() < 8);
    }
}
