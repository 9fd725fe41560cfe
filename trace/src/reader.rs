//! Reading a trace as a stream. Events are decoded one at a time from the current frame, so memory
//! is bounded by one frame, never by the file, and no length read from the file is trusted before
//! the bytes behind it have arrived.
//!
//! # Memory bound
//! A reader holds at most: the current frame as stored and as decompressed (each at most
//! [`MAX_FRAME_LEN`], 64 MiB, and only as much as the file really holds: buffers grow with the bytes
//! read, not with the lengths claimed), the ring of recent allocations that resolves frees by
//! distance (8 MiB, see `serials`), and the one record being decoded (at most [`MAX_RECORD_BYTES`]
//! encoded). A crafted file cannot make it allocate more.
use std::io::{self, Read};

use bincode::Options;

use crate::columns::{ColumnEvents, Stored};
use crate::delta::Deltas;
use crate::error::Error;
use crate::frame::{
    codec, frame_crc, FrameHeader, FrameSeq, WireOwned, WireV1, FLAG_COLUMNS, FLAG_NAMES,
    FLAG_ZSTD, FRAME_HEADER_LEN, FRAME_SEQ_LEN, MAX_FRAME_LEN, MAX_RECORD_BYTES, PREAMBLE_LEN,
    SEQ_VERSION,
};
use crate::header::{Header, FORMAT_VERSION, MAGIC};
use crate::record::{Event, Record};

/// Streams the events of a trace.
///
/// A torn last frame (the process died while writing it) ends the stream normally and sets
/// [`TraceReader::truncated`]; so does a stream that ends without an [`Record::End`]. A frame that is
/// complete but fails its checks is an [`Error::CorruptFrame`]; the events of that frame before the
/// damage have been returned.
///
/// Since format version 8 every frame carries its number: a frame whose number was seen already is
/// skipped (counted in [`TraceReader::duplicate_frames`]), and a gap in the numbers is counted in
/// [`TraceReader::missing_frames`].
pub struct TraceReader<R: Read> {
    input: R,
    header: Header,
    version: u32,
    offset: u64,
    saw_end: bool,
    torn_bytes: u64,
    /// The stream ended in zeros where a frame should start (see [`TraceReader::unwritten_tail`]).
    unwritten_tail: bool,
    at_eof: bool,
    frames: u64,
    names_only: bool,
    /// Live allocations by serial, to turn frees stored by distance back into frees (across frames).
    frees: crate::serials::FreeResolver,
    /// The frame being decoded.
    frame: Frame,
    /// The frame as stored (reused between frames).
    stored: Vec<u8>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    /// The number the next frame should carry (version 8).
    next_seq: u64,
    duplicate_frames: u64,
    missing_frames: u64,
    unresolved_events: u64,
    last_event_bytes: usize,
}

/// The decompressed payload of the current frame and how far it has been decoded.
#[derive(Default)]
struct Frame {
    raw: Vec<u8>,
    pos: usize,
    start: u64,
    deltas: Deltas,
    /// Version 1: the running time.
    t: u64,
    /// The address the deltas refer to is unknown (an unresolved free by distance set it).
    addr_lost: bool,
    /// Where its columns are read (a frame in columns, version 10): `raw` is then their payload.
    columns: Option<ColumnEvents>,
}

/// Where a trace's frames end, for a writer that appends to it (see
/// [`TraceWriter::append`](crate::TraceWriter::append)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    /// The trace's format version: appended frames are written in it.
    pub version: u32,
    /// The number the next frame gets.
    pub next_seq: u64,
    /// Allocations read so far (exact when every frame was decoded).
    pub next_serial: u64,
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the preamble and header.
    pub fn new(mut input: R) -> Result<Self, Error> {
        let mut pre = [0u8; PREAMBLE_LEN];
        let got = read_full(&mut input, &mut pre)?;
        if got == 0 {
            return Err(Error::Empty);
        }
        let magic_len = got.min(MAGIC.len());
        if pre[..magic_len] != MAGIC[..magic_len] {
            return Err(Error::NotATrace {
                found: pre[..magic_len].to_vec(),
            });
        }
        if got < PREAMBLE_LEN {
            return Err(Error::HeaderTruncated);
        }
        let version = u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]);
        if version == 0 || version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                known: FORMAT_VERSION,
            });
        }
        let len = u32::from_le_bytes([pre[12], pre[13], pre[14], pre[15]]);
        let crc = u32::from_le_bytes([pre[16], pre[17], pre[18], pre[19]]);
        if len > MAX_FRAME_LEN {
            return Err(Error::CorruptHeader(format!(
                "it claims {len} bytes, more than a header may hold"
            )));
        }
        let mut body = Vec::new();
        if read_up_to(&mut input, &mut body, len)? < len as usize {
            return Err(Error::HeaderTruncated);
        }
        if crc32fast::hash(&body) != crc {
            return Err(Error::CorruptHeader("its checksum does not match".into()));
        }
        let header: Header = codec(u64::from(len))
            .deserialize(&body)
            .map_err(|e| Error::CorruptHeader(e.to_string()))?;
        Ok(TraceReader {
            input,
            header,
            version,
            offset: (PREAMBLE_LEN + body.len()) as u64,
            saw_end: false,
            torn_bytes: 0,
            unwritten_tail: false,
            at_eof: false,
            frees: Default::default(),
            frames: 0,
            names_only: false,
            frame: Frame::default(),
            stored: Vec::new(),
            decompressor: None,
            next_seq: 0,
            duplicate_frames: 0,
            missing_frames: 0,
            unresolved_events: 0,
            last_event_bytes: 0,
        })
    }

    /// From now on, return only the records that name things and the end (see
    /// [`Record::names_frames`]): in a trace of version 4 or later the other frames are checked but
    /// not decompressed or decoded. Older traces are read whole (the caller filters).
    pub fn names_only(&mut self) {
        self.names_only = true;
    }

    /// The header of the traced process.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The format version of the file.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// True once the stream has ended without the shim's orderly [`Record::End`], or with a torn frame.
    /// Meaningful after [`TraceReader::next_event`] has returned `Ok(None)`.
    pub fn truncated(&self) -> bool {
        self.at_eof && (!self.saw_end || self.torn_bytes > 0)
    }

    /// Bytes of a torn last frame that were skipped.
    pub fn torn_bytes(&self) -> u64 {
        self.torn_bytes
    }

    /// True when the stream ended in zeros where a frame should start: room the shim set aside for
    /// the trace (past a file-size limit the program set) and never wrote, because the process
    /// ended before the trace was closed. It ends the stream as a torn frame does.
    pub fn unwritten_tail(&self) -> bool {
        self.unwritten_tail
    }

    /// Bytes of the trace consumed so far (the header and the complete frames read).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Complete frames read so far (duplicates included).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames skipped because a frame with the same number was read before (version 8; an older
    /// trace cannot tell, and reports 0).
    pub fn duplicate_frames(&self) -> u64 {
        self.duplicate_frames
    }

    /// Frames missing between the ones read: gaps in the frame numbers (version 8). Frames lost
    /// after the last one read cannot be seen; such a trace also lacks its end.
    pub fn missing_frames(&self) -> u64 {
        self.missing_frames
    }

    /// Heap events left out because their address is unknown: a free by distance whose allocation
    /// was in a missing frame, and the events with addresses after it in its frame (their addresses
    /// are stored as differences from the freed one) up to the next free that resolves.
    pub fn unresolved_events(&self) -> u64 {
        self.unresolved_events
    }

    /// Encoded bytes of the event [`TraceReader::next_event`] returned last: what it cost to store,
    /// a measure of what it costs to hold.
    pub fn last_event_bytes(&self) -> usize {
        self.last_event_bytes
    }

    /// Where the frames read so far end: what a writer that appends needs to know.
    pub fn resume(&self) -> Resume {
        Resume {
            version: self.version,
            next_seq: self.next_seq,
            next_serial: self.frees.next_serial(),
        }
    }

    /// Reading a trace that is still being written: after the stream ended ([`TraceReader::next_event`]
    /// returned `None`) without the trace's end, forgets that end, torn last frame included, so that
    /// reading goes on with what was appended since. The caller must then make the input yield the
    /// trace's bytes from [`TraceReader::offset`] on (the torn frame's bytes were consumed). False,
    /// and nothing changes, once the trace's [`Record::End`] was read: nothing follows it.
    pub fn follow(&mut self) -> bool {
        if self.saw_end {
            return false;
        }
        self.at_eof = false;
        self.torn_bytes = 0;
        true
    }

    /// The input, to position it for [`TraceReader::follow`].
    pub fn input_mut(&mut self) -> &mut R {
        &mut self.input
    }

    /// The next event, or `None` at the end of the stream.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        loop {
            if let Some(ev) = self.decode_next()? {
                if matches!(ev.record, Record::End(_)) {
                    self.saw_end = true;
                }
                return Ok(Some(ev));
            }
            if self.at_eof || !self.read_frame()? {
                self.at_eof = true;
                return Ok(None);
            }
        }
    }

    /// Decodes the next event of the current frame; `None` when the frame is used up.
    fn decode_next(&mut self) -> Result<Option<Event>, Error> {
        loop {
            let start = self.frame.start;
            let corrupt = |why: String| Error::CorruptFrame { offset: start, why };
            let ev = if self.version == 1 {
                let f = &mut self.frame;
                if f.pos >= f.raw.len() {
                    return Ok(None);
                }
                let mut cursor: &[u8] = &f.raw[f.pos..];
                let before = cursor.len();
                let options = codec((cursor.len() as u64).min(MAX_RECORD_BYTES));
                let WireV1(dt, tid, record) = options
                    .deserialize_from(&mut cursor)
                    .map_err(|e| corrupt(format!("an event does not decode: {e}")))?;
                self.last_event_bytes = before - cursor.len();
                f.pos += self.last_event_bytes;
                f.t = f.t.wrapping_add(dt as u64);
                Some(Event {
                    t: f.t,
                    tid,
                    record,
                })
            } else {
                let Some((dt, dtid, record)) = self.next_stored().map_err(corrupt)? else {
                    return Ok(None);
                };
                self.resolve(dt, dtid, record).map_err(corrupt)?
            };
            if let Some(e) = ev
                .as_ref()
                .filter(|e| e.record.since_version() > self.version)
            {
                return Err(corrupt(format!(
                    "a record of kind {} (format version {} on) is in a version {} trace",
                    e.record.kind_name(),
                    e.record.since_version(),
                    self.version
                )));
            }
            if ev.is_some() {
                return Ok(ev);
            }
        }
    }

    /// The next event of the current frame as stored (version 2 on), from its columns or its rows;
    /// sets [`TraceReader::last_event_bytes`].
    #[inline]
    fn next_stored(&mut self) -> Result<Option<(i64, i64, Record)>, String> {
        let f = &mut self.frame;
        let row: &[u8] = match f.columns.as_mut() {
            Some(columns) => match columns
                .next(&f.raw)
                .map_err(|why| format!("its columns do not decode: {why}"))?
            {
                None => return Ok(None),
                Some((Stored::Heap(dt, dtid, record), bytes)) => {
                    self.last_event_bytes = bytes;
                    return Ok(Some((dt, dtid, record)));
                }
                Some((Stored::Other(row), bytes)) => {
                    self.last_event_bytes = bytes;
                    row
                }
            },
            None if f.pos < f.raw.len() => &f.raw[f.pos..],
            None => return Ok(None),
        };
        let mut cursor = row;
        let stored = match crate::hot::decode(&mut cursor) {
            Some(hot) => hot,
            None => {
                let options = codec((cursor.len() as u64).min(MAX_RECORD_BYTES));
                let WireOwned(dt, dtid, record) = options
                    .deserialize_from(&mut cursor)
                    .map_err(|e| format!("an event does not decode: {e}"))?;
                (dt, dtid, record)
            }
        };
        if f.columns.is_some() {
            if !cursor.is_empty() {
                return Err("its columns do not decode: a record is shorter than its row".into());
            }
        } else {
            self.last_event_bytes = row.len() - cursor.len();
            f.pos += self.last_event_bytes;
        }
        Ok(Some(stored))
    }

    /// The event a stored one stands for: its time, thread and address from the deltas, a free by
    /// distance turned back into its free; `None` for an event whose address is unknown.
    #[inline]
    fn resolve(&mut self, dt: i64, dtid: i64, record: Record) -> Result<Option<Event>, String> {
        let f = &mut self.frame;
        let mut ev = f.deltas.decode(dt, dtid, record);
        if f.addr_lost && crate::delta::addr_of(&mut ev.record).is_some() {
            if matches!(ev.record, Record::Alloc(_)) {
                self.frees.unknown_alloc();
            }
            self.unresolved_events += 1;
            return Ok(None);
        }
        match self.frees.decode(ev.record)? {
            Some((record, freed)) => {
                if let Some(addr) = freed {
                    f.deltas.set_addr(addr);
                    f.addr_lost = false;
                }
                Ok(Some(Event { record, ..ev }))
            }
            None => {
                f.addr_lost = true;
                self.unresolved_events += 1;
                Ok(None)
            }
        }
    }

    /// Reads one frame and makes it the current one; false at the end of the stream.
    fn read_frame(&mut self) -> Result<bool, Error> {
        let start = self.offset;
        let corrupt = |why: String| Error::CorruptFrame { offset: start, why };
        let mut fixed = [0u8; FRAME_HEADER_LEN];
        let got = read_full(&mut self.input, &mut fixed)?;
        if got == 0 {
            return Ok(false);
        }
        if fixed[..got].iter().all(|&b| b == 0) {
            // No frame starts with a zero byte: this is space the shim set aside and never wrote.
            self.unwritten_tail = true;
            return Ok(false);
        }
        if fixed[0] != crate::frame::FRAME_MARKER {
            return Err(corrupt(format!(
                "expected a frame marker 0x{:02x}, found 0x{:02x}",
                crate::frame::FRAME_MARKER,
                fixed[0]
            )));
        }
        if got < FRAME_HEADER_LEN {
            self.torn_bytes = got as u64;
            return Ok(false);
        }
        let fh = FrameHeader::decode(&fixed).map_err(corrupt)?;
        let mut seq_bytes = [0u8; FRAME_SEQ_LEN];
        let with_seq = self.version >= SEQ_VERSION;
        let seq_len = if with_seq {
            let got = read_full(&mut self.input, &mut seq_bytes)?;
            if got < FRAME_SEQ_LEN {
                self.torn_bytes = (FRAME_HEADER_LEN + got) as u64;
                return Ok(false);
            }
            FRAME_SEQ_LEN
        } else {
            0
        };
        let got_payload = read_up_to(&mut self.input, &mut self.stored, fh.stored_len)?;
        if got_payload < fh.stored_len as usize {
            self.torn_bytes = (FRAME_HEADER_LEN + seq_len + got_payload) as u64;
            return Ok(false);
        }
        self.offset += (FRAME_HEADER_LEN + seq_len + got_payload) as u64;
        let crc = frame_crc(with_seq.then_some(&seq_bytes), &self.stored);
        if crc != fh.crc {
            return Err(corrupt("its checksum does not match".into()));
        }
        self.frames += 1;
        self.frame.raw.clear();
        self.frame.pos = 0;
        self.frame.columns = None;
        if with_seq {
            let seq = FrameSeq::decode(&seq_bytes);
            if seq.seq < self.next_seq {
                // A frame written (or copied) twice: its events were counted already.
                self.duplicate_frames += 1;
                return Ok(true);
            }
            if seq.seq > self.next_seq {
                self.missing_frames += seq.seq - self.next_seq;
                self.frees.skip_to(seq.serial);
            }
            self.next_seq = seq.seq + 1;
        }
        if self.names_only && self.version >= 4 && fh.flags & FLAG_NAMES == 0 {
            return Ok(true);
        }
        if fh.flags & FLAG_ZSTD != 0 {
            let raw_len = fh.raw_len as usize;
            let d = match self.decompressor.as_mut() {
                Some(d) => d,
                None => self
                    .decompressor
                    .insert(zstd::bulk::Decompressor::new().map_err(Error::Io)?),
            };
            // The claimed length is at most MAX_FRAME_LEN; the buffer is reused between frames.
            self.frame.raw.reserve(raw_len);
            let n = d
                .decompress_to_buffer(&self.stored, &mut self.frame.raw)
                .map_err(|e| corrupt(format!("it does not decompress: {e}")))?;
            if n != raw_len {
                self.frame.raw.clear();
                return Err(corrupt("it decompresses to the wrong length".into()));
            }
        } else {
            std::mem::swap(&mut self.frame.raw, &mut self.stored);
        }
        if fh.flags & FLAG_COLUMNS != 0 {
            match ColumnEvents::open(&self.frame.raw) {
                Ok(columns) => self.frame.columns = Some(columns),
                Err(why) => {
                    self.frame.raw.clear();
                    return Err(corrupt(format!("its columns do not decode: {why}")));
                }
            }
        }
        self.frame.start = start;
        self.frame.deltas = Deltas::default();
        self.frame.t = 0;
        self.frame.addr_lost = false;
        Ok(true)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Replaces `buf` with up to `len` bytes of the input; returns how many arrived. The buffer grows
/// with the bytes that arrive, so a length claimed by a torn or crafted file costs nothing.
fn read_up_to<R: Read>(r: &mut R, buf: &mut Vec<u8>, len: u32) -> io::Result<usize> {
    buf.clear();
    r.by_ref().take(u64::from(len)).read_to_end(buf)
}
