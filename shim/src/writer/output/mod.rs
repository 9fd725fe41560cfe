//! Where a process's trace file goes and how it is named: `<dir>/<exe>.<pid>[.<n>].mshim`, created
//! with mode 0600, never following or replacing anything already at that path.
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use memshim_trace::FILE_EXTENSION;

use crate::rank::host_for_file_name;
use crate::sys;

mod room;
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
        let held = (spare
            && crate::sys::owned_fds::claim(fd.as_raw_fd(), crate::sys::owned_fds::Owner::Trace))
        .then_some(fd);
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
            if crate::sys::owned_fds::holds(raw, crate::sys::owned_fds::Owner::Trace)
                && self.is_ours(raw)
            {
                if self.reclaimed && sys::path_id(&self.path) != Some((self.dev, self.ino)) {
                    return Err(replaced());
                }
                return self.write_whole(raw, buf, true);
            }
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
        let fd = match crate::sys::owned_fds::probe(reopen) {
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
            if crate::sys::owned_fds::claim(fd.as_raw_fd(), crate::sys::owned_fds::Owner::Trace) {
                let raw = fd.as_raw_fd();
                self.held = Some(fd);
                self.reclaimed = true;
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

    /// Whether frames are waiting in memory (the file could not take them): the frames after them
    /// may be all that lands, so they must read on their own.
    pub fn has_waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// What the trace should say at its end about frames still waiting then: how many bytes and
    /// why. The last chance (`finish_pending`) comes after the end is written, so whether they land
    /// is not known yet; the reader counts the frames that did not.
    pub fn waiting_note(&self) -> Option<String> {
        if self.pending_bytes == 0 {
            return None;
        }
        let why = self.waiting_for.map_or_else(
            || "unknown".into(),
            |e| io::Error::from_raw_os_error(e).to_string(),
        );
        Some(format!(
            "{} bytes of frames were still waiting to be written when the trace ended, since it \
             could not be written ({why}); those that did not fit at the end are missing, and \
             blocks freed in them look live",
            self.pending_bytes
        ))
    }

    /// At the end: every waiting frame, in order; once the disk proves full, only the newest that
    /// the space left takes (the reserve beyond the end, and what the file system still has), the
    /// older ones counted lost (the reader sees the gap in the frames' numbers). The newest, since
    /// the last moments before the end are what a report of a dying program needs most; the last
    /// frame, the end record's, is always tried. Returns the bytes not written and why.
    fn write_the_rest(&mut self) -> Option<(usize, io::Error)> {
        let mut lost = 0;
        let mut why = None;
        // Chosen before anything is written: a frame that fails is cut off, and cutting gives back
        // the reserve beyond the end too.
        let len = self.len;
        let disk = self
            .with_file(|fd, _| Ok(sys::file_room::space_left(fd, len)))
            .ok()
            .flatten();
        // Without a room of its own the file is also held to the size limit (raised to the hard
        // one here): frames written in order up to it each fill the space left, the end record
        // after them found none.
        let limit = self
            .room
            .is_none()
            .then(sys::file_size_limit)
            .flatten()
            .map(|l| l.saturating_sub(len));
        let (room, errno) = match (disk, limit) {
            (Some(d), Some(l)) if l < d => (Some(l), libc::EFBIG),
            (None, Some(l)) => (Some(l), libc::EFBIG),
            (d, _) => (d, libc::ENOSPC),
        };
        if let Some(room) = room {
            while self.pending.len() > 1 && self.pending_bytes > room as usize {
                if let Some(f) = self.pending.pop_front() {
                    self.pending_bytes -= f.len();
                    lost += f.len();
                    why = Some(io::Error::from_raw_os_error(errno));
                }
            }
        }
        while let Some(frame) = self.pending.pop_front() {
            self.pending_bytes -= frame.len();
            if let Err(e) = self.write_now(&frame) {
                lost += frame.len();
                why = Some(e);
            }
        }
        why.map(|e| (lost, e))
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

/// Where a trace file's frames end: on disk, and counting the frames still waiting in memory.
#[derive(Clone, Copy)]
pub struct FileMark {
    len: u64,
    waiting: usize,
}

impl TraceFile {
    /// The end of what was written or is waiting to be, for [`TraceFile::cut_back`].
    pub fn mark(&self) -> FileMark {
        FileMark {
            len: self.len,
            waiting: self.pending.len(),
        }
    }

    /// Cuts off every frame after `mark` (frames still waiting are dropped, frames on disk are
    /// truncated away, or turned back to zeros in the room), so that writing goes on from there.
    pub fn cut_back(&mut self, mark: FileMark) -> io::Result<()> {
        while self.pending.len() > mark.waiting {
            if let Some(f) = self.pending.pop_back() {
                self.pending_bytes -= f.len();
            }
        }
        if self.len == mark.len {
            return Ok(());
        }
        let (written, room) = (self.len, self.room);
        self.with_file(|fd, held| {
            if let Some(room) = room {
                room.clear_from(fd, mark.len, written);
                return Ok(());
            }
            sys::truncate(fd, mark.len)?;
            if held {
                sys::reserve_beyond_end(fd, mark.len as i64, RESERVE);
            }
            Ok(())
        })?;
        self.len = mark.len;
        Ok(())
    }

    /// Runs `f` on the trace's descriptor: the held one while it is still the shim's (`true`), or
    /// the file opened again by its path for the moment, once checked to be the file the shim
    /// created at the length it left it.
    fn with_file<T>(&self, f: impl FnOnce(i32, bool) -> io::Result<T>) -> io::Result<T> {
        if let Some(fd) = &self.held {
            let raw = fd.as_raw_fd();
            if crate::sys::owned_fds::holds(raw, crate::sys::owned_fds::Owner::Trace)
                && self.is_ours(raw)
            {
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

    /// The program is about to limit the size of the files it writes to `limit` bytes: unless the
    /// trace could not reach that limit for a long while anyway, it takes its room now, while the
    /// file still may grow (see `room`). What the writer had was put on disk just before. True when
    /// the trace has its room.
    pub fn before_size_limit(&mut self, limit: u64) -> bool {
        if self.room.is_some() {
            return true;
        }
        if limit >= self.len.saturating_add(room::ROOM) {
            return false;
        }
        let len = self.len;
        if let Ok(Some(room)) = self.with_file(|fd, _| Ok(Room::take(fd, len))) {
            self.room = Some(room);
        }
        self.room.is_some()
    }

    /// The room is given back: the file is cut to the frames it holds.
    fn give_back_room(&mut self) {
        let Some(room) = self.room else { return };
        let len = self.len;
        if self.with_file(|fd, _| room.give_back(fd, len)).is_ok() {
            self.room = None;
        }
    }

    /// The last chance for what waited, once the end is written: the program is ending, and a
    /// descriptor or a file size above its soft limits may be had for a moment. The room, if any,
    /// is given back. Returns the bytes that still could not be written, and why.
    pub fn finish_pending(&mut self) -> Option<(usize, io::Error)> {
        self.at_end = true;
        let lost = if self.pending.is_empty() {
            None
        } else {
            sys::with_limits_raised(|| self.write_the_rest())
        };
        self.give_back_room();
        lost
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
            if crate::sys::owned_fds::holds(fd.as_raw_fd(), crate::sys::owned_fds::Owner::Trace) {
                crate::sys::owned_fds::disown(fd.as_raw_fd(), crate::sys::owned_fds::Owner::Trace);
            } else {
                // The program took the number back: closing it would close the program's file.
                std::mem::forget(fd);
            }
        }
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

#[cfg(test)]
mod tests;
