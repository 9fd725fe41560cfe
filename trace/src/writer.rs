//! Writing a trace: the preamble once, then events batched into frames.
use std::io::{self, Write};

use bincode::Options;

use crate::columns::{self, Columns};
use crate::delta::Deltas;
use crate::frame::{
    codec, frame_crc, FrameHeader, FrameSeq, WireRef, COLUMNS_VERSION, FLAG_COLUMNS, FLAG_NAMES,
    FLAG_ZSTD, MAX_FRAME_LEN, SEQ_VERSION,
};
use crate::header::{Header, FORMAT_VERSION, MAGIC};
use crate::hot;
use crate::reader::Resume;
use crate::record::FreeBack;
use crate::record::{Alloc, Event, Free, Record};
use crate::serials::FreeIndex;

/// Encodes events into frames and writes each frame whole with a single `write_all`.
///
/// The caller decides when a frame ends ([`TraceWriter::flush_frame`]); the shim does so at least every
/// 100 ms and whenever [`TraceWriter::pending_bytes`] grows past its batch size.
pub struct TraceWriter<W: Write> {
    out: W,
    /// Pending events, and pending naming records (each with its own delta state, one frame each).
    /// Since version 10 the events are gathered in `columns` and `raw` only holds the row of the
    /// record being added.
    raw: Vec<u8>,
    columns: Option<Columns>,
    deltas: Deltas,
    names: Vec<u8>,
    name_deltas: Deltas,
    frame: Vec<u8>,
    compressor: Option<zstd::bulk::Compressor<'static>>,
    /// Live allocations' serials, for frees stored by distance (across frames).
    frees: FreeIndex,
    /// Frees are stored with their address (see [`TraceWriter::store_frees_by_address`]).
    frees_by_address: bool,
    /// The format version the frames are written in (older only when appending to an older trace).
    version: u32,
    /// The number of the next frame (version 8).
    seq: u64,
    /// Allocations stored before the pending event frame's first event.
    raw_serial: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the preamble and header to `out`. `zstd_level` of `None` stores frames uncompressed.
    pub fn new(mut out: W, header: &Header, zstd_level: Option<i32>) -> io::Result<Self> {
        let body = codec(u64::MAX)
            .serialize(header)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let mut pre = Vec::with_capacity(20 + body.len());
        pre.extend_from_slice(&MAGIC);
        pre.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        pre.extend_from_slice(&(body.len() as u32).to_le_bytes());
        pre.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        pre.extend_from_slice(&body);
        out.write_all(&pre)?;
        out.flush()?;
        Self::append(
            out,
            zstd_level,
            Resume {
                version: FORMAT_VERSION,
                next_seq: 0,
                next_serial: 0,
            },
        )
    }

    /// Continues an existing trace: `out` must be positioned at the end of its last complete frame,
    /// and `at` is what a [`TraceReader`](crate::TraceReader) that read every frame says
    /// ([`TraceReader::resume`](crate::TraceReader::resume)): frames are written in the trace's own
    /// version, numbered on from its last. Writes no preamble (used to add symbols to a finished
    /// trace); the appended frames should hold no allocations (their serials would start again).
    pub fn append(out: W, zstd_level: Option<i32>, at: Resume) -> io::Result<Self> {
        let compressor = match zstd_level {
            Some(level) => Some(zstd::bulk::Compressor::new(level)?),
            None => None,
        };
        Ok(TraceWriter {
            out,
            raw: Vec::with_capacity(1 << 16),
            columns: (at.version >= COLUMNS_VERSION).then(Columns::default),
            deltas: Deltas::default(),
            names: Vec::new(),
            name_deltas: Deltas::default(),
            frame: Vec::new(),
            compressor,
            frees: FreeIndex::default(),
            frees_by_address: false,
            version: at.version,
            seq: at.next_seq,
            raw_serial: at.next_serial,
        })
    }

    /// Appends one event to the current frame (a naming record to the current names frame).
    pub fn push(&mut self, event: &Event) -> io::Result<()> {
        match &event.record {
            Record::Alloc(a) => return self.push_alloc(event.t, event.tid, a),
            Record::Free(f) => return self.push_free(event.t, event.tid, f),
            _ => {}
        }
        self.start_event();
        let (buf, deltas) = if event.record.names_frames() {
            (&mut self.names, &mut self.name_deltas)
        } else {
            (&mut self.raw, &mut self.deltas)
        };
        let (dt, dtid, record) = match self.frees.encode(&event.record) {
            Some((by_distance, addr)) if !self.frees_by_address => {
                let stored = Event {
                    t: event.t,
                    tid: event.tid,
                    record: by_distance,
                };
                let coded = deltas.encode(&stored);
                deltas.set_addr(addr);
                coded
            }
            _ => deltas.encode(event),
        };
        codec(u64::MAX)
            .serialize_into(&mut *buf, &WireRef(dt, dtid, &record))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let len = buf.len();
        match self.columns.as_mut() {
            Some(columns) if !event.record.names_frames() => {
                columns.other(&self.raw);
                self.raw.clear();
                self.end_event(0)
            }
            _ => self.end_event(len),
        }
    }

    /// Appends a heap allocation: the same bytes as [`TraceWriter::push`] of its
    /// [`Record::Alloc`](crate::Record::Alloc), written without serde (the shim's hot path).
    pub fn push_alloc(&mut self, t: u64, tid: u32, alloc: &Alloc) -> io::Result<()> {
        self.start_event();
        self.frees.alloc(alloc.addr);
        let (dt, dtid) = self.deltas.step(t, tid);
        let addr = self.deltas.addr(alloc.addr);
        match self.columns.as_mut() {
            Some(columns) => columns.alloc(dt, dtid, alloc, addr),
            None => hot::encode_alloc(&mut self.raw, dt, dtid, alloc, addr),
        }
        self.end_event(self.raw.len())
    }

    /// Appends a heap free, as [`TraceWriter::push_alloc`] does an allocation.
    pub fn push_free(&mut self, t: u64, tid: u32, free: &Free) -> io::Result<()> {
        self.start_event();
        let (dt, dtid) = self.deltas.step(t, tid);
        // The block leaves the index either way (its serial was counted).
        match self.frees.free(free.addr) {
            Some(back) if !self.frees_by_address => {
                let by_distance = FreeBack {
                    back,
                    realloc: free.realloc,
                };
                match self.columns.as_mut() {
                    Some(columns) => columns.free_back(dt, dtid, &by_distance),
                    None => hot::encode_free_back(&mut self.raw, dt, dtid, &by_distance),
                }
                self.deltas.set_addr(free.addr);
            }
            _ => {
                let addr = self.deltas.addr(free.addr);
                match self.columns.as_mut() {
                    Some(columns) => columns.free(dt, dtid, addr, free.realloc),
                    None => hot::encode_free(&mut self.raw, dt, dtid, addr, free.realloc),
                }
            }
        }
        self.end_event(self.raw.len())
    }

    /// The memory that a coming [`TraceWriter::push_alloc`] or [`TraceWriter::push_free`] of `addr`
    /// reads first (an entry of the table of live allocations, which is larger than the cache): for
    /// the caller to prefetch while it has other events to encode, so that the misses overlap.
    pub fn lookup_of(&self, addr: u64) -> &impl Sized {
        self.frees.home_slot(addr)
    }

    fn start_event(&mut self) {
        if self.raw.is_empty() && self.columns.as_ref().is_none_or(|c| c.events() == 0) {
            self.raw_serial = self.frees.next_serial();
        }
    }

    /// Cuts the frame once the buffer an event went to holds `len` bytes, half the most a frame
    /// may hold, or once the columns hold as many events or bytes as a frame may (the rows a reader
    /// rebuilds from them stay within a frame's bound: see `columns::MAX_EVENTS`).
    fn end_event(&mut self, len: usize) -> io::Result<()> {
        let half = u64::from(MAX_FRAME_LEN) / 2;
        let columns_full = self
            .columns
            .as_ref()
            .is_some_and(|c| c.events() >= columns::MAX_EVENTS || c.len() as u64 >= half);
        if columns_full || len as u64 >= half {
            self.flush_frame()?;
        }
        Ok(())
    }

    /// While `on`, frees are stored with their address instead of by distance (see `serials`), so
    /// that each frame reads without the frames before it: for a writer whose output is failing,
    /// which may have to drop older frames. The serials go on being counted either way.
    pub fn store_frees_by_address(&mut self, on: bool) {
        self.frees_by_address = on;
    }

    /// Bytes encoded but not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.raw.len() + self.columns.as_ref().map_or(0, Columns::len) + self.names.len()
    }

    /// Writes the pending events as one frame and then the pending naming records as another (so the
    /// end record stays last), each only if there is any.
    pub fn flush_frame(&mut self) -> io::Result<()> {
        let mut raw = std::mem::take(&mut self.raw);
        let kind = match self.columns.as_mut() {
            Some(columns) if columns.events() > 0 => {
                raw.clear();
                columns.write(&mut raw);
                columns.clear();
                FLAG_COLUMNS
            }
            _ => 0,
        };
        self.write_frame(&raw, kind, self.raw_serial)?;
        self.raw = raw;
        self.raw.clear();
        self.deltas.reset();
        let names = std::mem::take(&mut self.names);
        self.write_frame(&names, FLAG_NAMES, self.frees.next_serial())?;
        self.names = names;
        self.names.clear();
        self.name_deltas.reset();
        self.out.flush()
    }

    fn write_frame(&mut self, raw: &[u8], kind: u8, serial: u64) -> io::Result<()> {
        if raw.is_empty() {
            return Ok(());
        }
        let compressed = match self.compressor.as_mut() {
            Some(c) => Some(c.compress(raw)?),
            None => None,
        };
        let (flags, stored) = match &compressed {
            Some(bytes) => (FLAG_ZSTD | kind, bytes.as_slice()),
            None => (kind, raw),
        };
        let seq = (self.version >= SEQ_VERSION).then(|| {
            FrameSeq {
                seq: self.seq,
                serial,
            }
            .encode()
        });
        let header = FrameHeader {
            flags,
            stored_len: stored.len() as u32,
            raw_len: raw.len() as u32,
            crc: frame_crc(seq.as_ref(), stored),
        };
        self.frame.clear();
        self.frame.extend_from_slice(&header.encode());
        if let Some(seq) = &seq {
            self.frame.extend_from_slice(seq);
        }
        self.frame.extend_from_slice(stored);
        // Numbered before the write: a frame that failed half-way must not lend its number to the
        // next one, which a reader would then take for a duplicate.
        self.seq += 1;
        self.out.write_all(&self.frame)
    }

    /// The output, for what it must do beyond frames (the shim's trace file finishing what waited).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The output, to look at.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The number the next frame will carry.
    pub fn next_frame(&self) -> u64 {
        self.seq
    }

    /// Takes back the frames numbered `next` and later, which the caller has cut off the output
    /// (the end written before an `exec` that then failed, so that the trace goes on): the next
    /// frame carries `next` again. Nothing may be pending, and the frames taken back must hold no
    /// allocations or frees.
    pub fn take_back_frames(&mut self, next: u64) {
        debug_assert!(self.pending_bytes() == 0);
        self.seq = next.min(self.seq);
    }

    /// Flushes the last frame and gives back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_frame()?;
        Ok(self.out)
    }
}
