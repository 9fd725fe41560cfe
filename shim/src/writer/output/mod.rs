//! The trace file: frames written whole or not at all, through whatever the program leaves the shim
//! (its descriptors, its file-size limit, the disk), kept in memory while they cannot be written.
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use crate::sys;
use crate::sys::owned_fds::{self, Owner};

mod bounds;
mod room;
use bounds::Bounds;
use room::Room;

/// The trace file. Its descriptor sits high in the table (`sys::move_high`) and is known to
/// `owned_fds`: a program that closes every descriptor takes it back, and then each frame reopens
/// the file by its path (append-only, never following a symlink), checks that it is still the file
/// the shim created (device, inode and length), writes and closes it. So the shim never writes a
/// file of the program's, never closes a descriptor that has become the program's, and needs no
/// descriptor of its own between frames.
///
/// When a frame cannot be written for a reason that may pass (no descriptor free under the
/// program's `RLIMIT_NOFILE`, its `RLIMIT_FSIZE` reached, the disk full), it waits in memory for the
/// next chance, the last chance being the end, where the soft limits are raised for a moment. A
/// partly written frame is cut off, so the file always ends on a whole frame; and 1 MiB beyond its
/// end is kept allocated on the disk, so the last frames (the end record among them) can still be
/// written when the disk has filled meanwhile.
///
/// Before the program limits the size of its files (`RLIMIT_FSIZE`), the trace takes its room
/// (see `room`): later frames are stored into it through a mapping, which the limit does not stop.
pub struct TraceFile {
    path: CString,
    held: Option<OwnedFd>,
    dev: u64,
    ino: u64,
    /// Bytes on disk so far: a file that took the trace's name and a freed inode number has
    /// another length.
    len: u64,
    /// Frames that could not be written yet, oldest first, and their bytes.
    pending: std::collections::VecDeque<Vec<u8>>,
    pending_bytes: usize,
    /// Why the oldest waiting frame could not be written (an `errno`).
    waiting_for: Option<i32>,
    /// Whether descriptors may be kept (the soft `RLIMIT_NOFILE` is not tight).
    spare: bool,
    /// Set for the last writes at the end, which wait for nothing.
    at_end: bool,
    /// The held descriptor was opened again by path after the program had closed the first: the
    /// path is checked before each frame, as each reopening checked it.
    reclaimed: bool,
    /// Room taken before a file-size limit: frames are stored into it, and the file is this long.
    room: Option<Room>,
    /// Where the newest frames on disk end, to cut back to at the end (see `ending`).
    bounds: Bounds,
}

/// Under a tight `RLIMIT_NOFILE` (no descriptor kept, each write opens the file for a moment), frames
/// wait in memory until this many bytes are waiting, or the end: every open might take the one
/// number the program was about to get.
const TIGHT_BATCH: usize = 4 << 20;

/// Below this soft `RLIMIT_NOFILE` the trace keeps no descriptor open.
const MIN_NOFILE: u64 = 64;

/// Frames kept in memory while they cannot be written, at most.
const MAX_PENDING: usize = 64 << 20;

/// Disk space kept allocated beyond the end of the file, for the last frames.
const RESERVE: i64 = 1 << 20;

fn replaced() -> io::Error {
    io::Error::other("the trace file was replaced by another file; nothing more is written")
}

/// Whether a write error may pass: the frame waits instead of ending the trace.
fn may_pass(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::EFBIG | libc::ENOSPC | libc::EDQUOT)
    )
}

impl TraceFile {
    fn new(path: CString, fd: OwnedFd) -> io::Result<TraceFile> {
        let fd = sys::move_high(fd);
        let (dev, ino) = sys::file_id(fd.as_raw_fd())
            .ok_or_else(|| io::Error::other("cannot read the trace file's identity"))?;
        // With few descriptors to spare, none is kept: each frame opens the file for a moment.
        let spare = sys::nofile_limit().is_none_or(|n| n >= MIN_NOFILE);
        let held = (spare && owned_fds::claim(fd.as_raw_fd(), Owner::Trace)).then_some(fd);
        if let Some(fd) = &held {
            sys::reserve_beyond_end(fd.as_raw_fd(), 0, RESERVE);
        }
        Ok(TraceFile {
            path,
            held,
            dev,
            ino,
            len: 0,
            pending: Default::default(),
            pending_bytes: 0,
            waiting_for: None,
            spare,
            at_end: false,
            reclaimed: false,
            room: None,
            bounds: Bounds::default(),
        })
    }

    /// The file's length as it should be on disk: the frames, or the room that holds them.
    fn file_len(&self) -> u64 {
        self.room.map_or(self.len, |r| r.end)
    }

    fn is_ours(&self, fd: i32) -> bool {
        // The length is not asked here: the descriptor was never released, so it is the file.
        sys::file_id(fd) == Some((self.dev, self.ino))
    }

    /// Writes `buf` whole through the held descriptor, or a reopened one; on failure the file is
    /// cut back to its last whole frame.
    fn write_now(&mut self, buf: &[u8]) -> io::Result<()> {
        if let Some(fd) = &self.held {
            let raw = fd.as_raw_fd();
            // Held from the check to the last call through the number (see `owned_fds::in_use`).
            let using = owned_fds::in_use(raw, Owner::Trace);
            if using.is_some() && self.is_ours(raw) {
                if self.reclaimed && sys::path_id(&self.path) != Some((self.dev, self.ino)) {
                    return Err(replaced());
                }
                return self.write_whole(raw, buf, true);
            }
            drop(using);
            // Released by the program: the number is not ours to close any more.
            if let Some(fd) = self.held.take() {
                std::mem::forget(fd);
            }
        }
        if !self.spare && !self.at_end && self.pending_bytes + buf.len() < TIGHT_BATCH {
            // Not now (see `TIGHT_BATCH`): the frame waits.
            return Err(io::Error::from_raw_os_error(libc::EMFILE));
        }
        let spare = self.spare;
        let reopen = || -> io::Result<OwnedFd> {
            let fd = sys::open_append(&self.path)?;
            // Kept again, high, so that no later frame opens anything.
            Ok(if spare { sys::move_high(fd) } else { fd })
        };
        // Not for a moment after the program took the trace's descriptor back (it is opening its
        // own files, see `owned_fds::probe`), except at the end: the frame waits.
        let fd = match owned_fds::probe(reopen) {
            Some(fd) => fd?,
            None if self.at_end => reopen()?,
            None => return Err(io::Error::from_raw_os_error(libc::EMFILE)),
        };
        let file = File::from(fd);
        match file.metadata() {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino && m.len() == self.file_len() => {}
            _ => return Err(replaced()),
        }
        if self.spare {
            let fd = OwnedFd::from(file);
            if owned_fds::claim(fd.as_raw_fd(), Owner::Trace) {
                let raw = fd.as_raw_fd();
                self.held = Some(fd);
                self.reclaimed = true;
                // Released already (a program closing descriptors as it opened them): the number
                // is the program's, and what was opened is not the shim's to close.
                let Some(_using) = owned_fds::in_use(raw, Owner::Trace) else {
                    if let Some(fd) = self.held.take() {
                        std::mem::forget(fd);
                    }
                    return Err(io::Error::from_raw_os_error(libc::EBADF));
                };
                return self.write_whole(raw, buf, true);
            }
            return self.write_whole(fd.as_raw_fd(), buf, false);
        }
        self.write_whole(file.as_raw_fd(), buf, false)
    }

    fn write_whole(&mut self, fd: i32, buf: &[u8], held: bool) -> io::Result<()> {
        // Before the end a frame is written only where the reserve beyond it stays whole: a write
        // into the reserve would take the space the end's frames need once the disk is full.
        if !self.at_end {
            // Only the reserve's new part is asked for: a failed fallocate may give back every
            // unwritten page of its range (tmpfs does), and the reserve held so far must stay.
            let from = self.len + RESERVE as u64;
            if let Err(e) = sys::file_room::allocate(fd, from, buf.len() as u64) {
                if matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
                    return Err(e);
                }
            }
        }
        if let Some(room) = self.room {
            // Nothing is stored when this fails: there is nothing to cut off.
            room.store(fd, self.len, buf)?;
            self.len += buf.len() as u64;
            self.bounds.push(self.len);
            return Ok(());
        }
        if let Err(e) = sys::write_all(fd, buf) {
            let _ = sys::truncate(fd, self.len);
            if held {
                // Cutting the frame off freed its blocks, and the reserve beyond them: take it back.
                sys::reserve_beyond_end(fd, self.len as i64, RESERVE);
            }
            return Err(e);
        }
        self.len += buf.len() as u64;
        self.bounds.push(self.len);
        if held {
            sys::reserve_beyond_end(fd, self.len as i64, RESERVE);
        }
        Ok(())
    }

    /// Writes what waited, then `buf`; keeps them waiting while the cause may pass.
    fn write_or_keep(&mut self, buf: &[u8]) -> io::Result<()> {
        while let Some(frame) = self.pending.pop_front() {
            if let Err(e) = self.write_now(&frame) {
                self.pending.push_front(frame);
                return self.keep(buf, e);
            }
            self.pending_bytes -= frame.len();
        }
        match self.write_now(buf) {
            Ok(()) => Ok(()),
            Err(e) => self.keep(buf, e),
        }
    }

    fn keep(&mut self, buf: &[u8], e: io::Error) -> io::Result<()> {
        if !may_pass(&e) || self.pending_bytes + buf.len() > MAX_PENDING {
            return Err(e);
        }
        if self.pending.is_empty() {
            self.waiting_for = e.raw_os_error();
        }
        self.pending_bytes += buf.len();
        self.pending.push_back(buf.to_vec());
        Ok(())
    }

    /// Runs `f` on the trace's descriptor: the held one while it is still the shim's (`true`), or
    /// the file opened again by its path for the moment, once checked to be the file the shim
    /// created at the length it left it.
    fn with_file<T>(&self, f: impl FnOnce(i32, bool) -> io::Result<T>) -> io::Result<T> {
        if let Some(fd) = &self.held {
            let raw = fd.as_raw_fd();
            let using = owned_fds::in_use(raw, Owner::Trace);
            if using.is_some() && self.is_ours(raw) {
                return f(raw, true);
            }
        }
        let file = File::from(sys::open_append(&self.path)?);
        match file.metadata() {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino && m.len() == self.file_len() => {}
            _ => return Err(replaced()),
        }
        f(file.as_raw_fd(), false)
    }
}

impl Write for TraceFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_or_keep(buf).map(|()| buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        if let Some((n, e)) = self.finish_pending() {
            crate::channel::warn(&format!(
                "{n} bytes of the trace could not be written to {}: {e}",
                self.path.to_string_lossy()
            ));
        }
        if let Some(fd) = self.held.take() {
            let using = owned_fds::in_use(fd.as_raw_fd(), Owner::Trace);
            if using.is_some() {
                owned_fds::disown(fd.as_raw_fd(), Owner::Trace);
                // Closed while still marked in use, so no release of the number goes on meanwhile.
                drop(fd);
            } else {
                // The program took the number back: closing it would close the program's file.
                std::mem::forget(fd);
            }
        }
    }
}

pub(crate) mod ending;
pub(crate) mod naming;

#[cfg(test)]
mod tests;
