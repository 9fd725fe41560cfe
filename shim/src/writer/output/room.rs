//! The trace's room past a file-size limit: when the program is about to limit the size of the files
//! it writes (`RLIMIT_FSIZE`), the trace file's length is set far ahead while it still may grow, and
//! every later frame is stored into that length through a mapping (see `sys::file_room`), which the
//! limit does not stop. At the end the file is cut back to the frames it holds.
//!
//! A process that dies before its end leaves the room's unwritten rest as zeros (a hole: no disk
//! used); the reader takes zeros where a frame should start as the end of what was written.
//!
//! Never: take room on a file system that cannot allocate ahead (a store into a hole that the disk
//! cannot take would raise SIGBUS in the program), or grow the file once the limit may be in force.
use std::io;

use crate::sys::file_room;

/// How far ahead of the trace's end the room reaches: a gigabyte of length, which costs no disk
/// until frames are stored into it. A trace that outgrows it keeps its frames in memory, as it does
/// under any limit.
pub const ROOM: u64 = 1 << 30;

/// Room taken: the file's length while it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    pub end: u64,
}

impl Room {
    /// Sets the file's length to `len + ROOM`; `None` (the file as it was) when the file system
    /// cannot allocate ahead within it or the length cannot be set.
    pub fn take(fd: libc::c_int, len: u64) -> Option<Room> {
        let end = len.checked_add(ROOM)?;
        // Allocating a page past the end without changing the length proves the file system can
        // allocate before a store (tmpfs, ext4, xfs, btrfs can; some network file systems cannot).
        file_room::allocate(fd, len, 4096).ok()?;
        if file_room::set_len(fd, end).is_err() {
            let _ = file_room::set_len(fd, len);
            return None;
        }
        Some(Room { end })
    }

    /// Stores `buf` at `at`; `EFBIG` when it does not fit in the room (it waits in memory then).
    pub fn store(&self, fd: libc::c_int, at: u64, buf: &[u8]) -> io::Result<()> {
        if at.saturating_add(buf.len() as u64) > self.end {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        file_room::store(fd, at, buf)
    }

    /// Frames after `len` are dropped: their bytes go back to zeros, so the reader ends at `len`.
    pub fn clear_from(&self, fd: libc::c_int, len: u64, written: u64) {
        let _ = file_room::clear(fd, len, written.saturating_sub(len));
    }

    /// The end: the file is cut back to the `len` bytes of frames it holds (shrinking is never
    /// limited).
    pub fn give_back(self, fd: libc::c_int, len: u64) -> io::Result<()> {
        file_room::set_len(fd, len)
    }
}
