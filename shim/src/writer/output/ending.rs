//! How a trace file ends: frames still waiting written at the last chance (the newest that fit
//! when the disk is full), the room past a file-size limit taken and given back, and frames cut
//! back after a failed exec.
use std::io;

use super::room::{self, Room};
use super::{TraceFile, RESERVE};
use crate::sys;

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
        self.bounds.forget_after(mark.len);
        Ok(())
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

impl TraceFile {
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
        // The last frame, the end record's, must land for the trace to read as ended: when the
        // space left cannot take even that (a hard size limit reached before the program started,
        // so the shim had no room of its own), the newest frames on disk are given up for it. The
        // reader counts them missing by the gap in the frames' numbers, as it does the ones dropped
        // below.
        let room = match (room, self.pending.back()) {
            (Some(r), Some(last)) if r < last.len() as u64 => {
                let need = last.len() as u64;
                match self.bounds.newest_leaving(len, r, need) {
                    Some(end)
                        if self
                            .cut_back(FileMark {
                                len: end,
                                waiting: self.pending.len(),
                            })
                            .is_ok() =>
                    {
                        lost += (len - end) as usize;
                        why = Some(io::Error::from_raw_os_error(errno));
                        Some(r + (len - end))
                    }
                    _ => Some(r),
                }
            }
            (r, _) => r,
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
