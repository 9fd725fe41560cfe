//! Samples of the C library's heap statistics (`mallinfo2`) and of the resident set, taken by the
//! sampler thread: how much memory the allocator holds but does not use (external fragmentation) and
//! how far the resident set is from what the program has live.
//!
//! # Safety
//! `mallinfo2` has no preconditions and returns a plain struct; it takes the allocator's own locks
//! briefly, which no producer holds while inside the shim.
#![allow(unsafe_code)]

use memshim_trace::HeapStats;

use crate::sys::proc_file::ProcFile;

/// One sample.
pub fn sample() -> HeapStats {
    // SAFETY: see the module note.
    let m = unsafe { libc::mallinfo2() };
    HeapStats {
        arena: m.arena as u64,
        in_use: m.uordblks as u64,
        free: m.fordblks as u64,
        mmapped: m.hblkhd as u64,
        releasable: m.keepcost as u64,
        rss: rss(),
    }
}

fn rss() -> u64 {
    static STATM: std::sync::Mutex<ProcFile> =
        std::sync::Mutex::new(ProcFile::new(c"/proc/self/statm"));
    let mut buf = [0u8; 256];
    // Only the sampler thread reads it; tried, not waited on, because a fork child's copy of the
    // lock may have been taken by its parent's sampler at the fork.
    let Some(n) = STATM.try_lock().ok().and_then(|mut f| f.read(&mut buf)) else {
        return 0;
    };
    let text = String::from_utf8_lossy(&buf[..n]);
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * crate::sys::page_size()
}
