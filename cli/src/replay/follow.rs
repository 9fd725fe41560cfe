//! A trace read while it is being written (`memshim top`): each reading decodes only the frames
//! appended since the last one and feeds them to the same analyses, which keep their state between
//! readings, so a reading costs what was written since, not the whole trace. A torn last frame is
//! read again whole once it is complete. A trace that was cut back, replaced by another file at the
//! same path, or whose bytes where the last reading stopped are no longer a frame, is read again
//! from its start.
//!
//! Never: read a byte before where the last reading stopped, except to start over.
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memshim_trace::{Error, TraceReader};

use super::apply::apply;
use super::finish::{finish, read_end};
use super::replayed::Replayed;

/// One trace, followed as it grows.
pub struct Following {
    path: PathBuf,
    /// The file's device and inode: another file at the path is another trace.
    identity: (u64, u64),
    reader: TraceReader<BufReader<File>>,
    r: Replayed,
    /// The notes the events made: those the end adds are made again at each reading.
    event_notes: usize,
    corrupt: Option<String>,
    /// Frames decoded by the last reading.
    last_frames: u64,
    /// Times the trace was read again from its start.
    restarts: u64,
    /// Readings since the trace was (last) opened.
    readings: u64,
}

impl Following {
    /// Opens the trace at `path`; nothing is read until [`Following::read`].
    pub fn open(path: &Path) -> Result<Following> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        let reader = TraceReader::new(BufReader::with_capacity(1 << 20, file))
            .with_context(|| format!("cannot read {}", path.display()))?;
        let r = Replayed::new(path, reader.header().clone());
        Ok(Following {
            path: path.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            reader,
            r,
            event_notes: 0,
            corrupt: None,
            last_frames: 0,
            restarts: 0,
            readings: 0,
        })
    }

    /// Reads what was written since the last reading (all of it, the first time) and returns the
    /// replay as of now.
    pub fn read(&mut self) -> Result<&Replayed> {
        let meta = std::fs::metadata(&self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        let replaced = (meta.dev(), meta.ino()) != self.identity;
        if replaced || meta.len() < self.reader.offset() {
            self.start_over()?;
        }
        if !self.read_on()? {
            // Where the last reading stopped is no longer a frame: the file was rewritten.
            self.start_over()?;
            self.read_on()?;
        }
        Ok(&self.r)
    }

    /// Frames decoded by the last [`Following::read`].
    pub fn frames_last_read(&self) -> u64 {
        self.last_frames
    }

    /// Times the trace was read again from its start (cut back, replaced or rewritten).
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    fn start_over(&mut self) -> Result<()> {
        let restarts = self.restarts + 1;
        *self = Following::open(&self.path)?;
        self.restarts = restarts;
        Ok(())
    }

    /// Feeds the new events to the analyses and finishes the replay again; false when the bytes
    /// where the last reading stopped are not a frame (nothing was fed then).
    fn read_on(&mut self) -> Result<bool> {
        let before = self.reader.frames();
        let first = self.readings == 0;
        self.readings += 1;
        self.r.notes.truncate(self.event_notes);
        let mut truncated = self.reader.truncated();
        if self.corrupt.is_none() && self.reader.follow() {
            let at = self.reader.offset();
            self.reader
                .input_mut()
                .seek(SeekFrom::Start(at))
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            loop {
                match self.reader.next_event() {
                    Ok(Some(ev)) => apply(&mut self.r, ev),
                    Ok(None) => {
                        truncated = self.reader.truncated();
                        break;
                    }
                    Err(e @ Error::CorruptFrame { .. }) => {
                        if !first && self.reader.frames() == before {
                            return Ok(false);
                        }
                        self.corrupt = Some(e.to_string());
                        truncated = true;
                        break;
                    }
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("cannot read {}", self.path.display()))
                    }
                }
            }
        }
        self.last_frames = self.reader.frames() - before;
        self.event_notes = self.r.notes.len();
        let end = read_end(&self.reader, truncated, self.corrupt.clone());
        finish(&mut self.r, end, None, &self.path, super::Detail::Full);
        Ok(true)
    }
}
