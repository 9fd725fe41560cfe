//! Reading a trace as a stream: memory is bounded by one frame, not by the file.
use std::collections::VecDeque;
use std::io::{self, Read};

use bincode::Options;

use crate::delta::Deltas;
use crate::error::Error;
use crate::frame::{
    codec, FrameHeader, WireOwned, WireV1, FLAG_NAMES, FLAG_ZSTD, FRAME_HEADER_LEN, MAX_FRAME_LEN,
    PREAMBLE_LEN,
};
use crate::header::{Header, FORMAT_VERSION, MAGIC};
use crate::record::{Event, Record};

/// Streams the events of a trace.
///
/// A torn last frame (the process died while writing it) ends the stream normally and sets
/// [`TraceReader::truncated`]; so does a stream that ends without an [`Record::End`]. A frame that is
/// complete but fails its checks is an [`Error::CorruptFrame`].
pub struct TraceReader<R: Read> {
    input: R,
    header: Header,
    version: u32,
    offset: u64,
    pending: VecDeque<Event>,
    saw_end: bool,
    torn_bytes: u64,
    at_eof: bool,
    frames: u64,
    names_only: bool,
    /// Live allocations by serial, to turn frees stored by distance back into frees (across frames).
    frees: crate::serials::FreeResolver,
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
        let mut body = vec![0u8; len as usize];
        if read_full(&mut input, &mut body)? < body.len() {
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
            pending: VecDeque::new(),
            saw_end: false,
            torn_bytes: 0,
            at_eof: false,
            frees: Default::default(),
            frames: 0,
            names_only: false,
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

    /// Bytes of the trace consumed so far (the header and the complete frames read).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Complete frames read so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The next event, or `None` at the end of the stream.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
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

    /// Reads one frame into `pending`; false at the end of the stream.
    fn read_frame(&mut self) -> Result<bool, Error> {
        let start = self.offset;
        let mut fixed = [0u8; FRAME_HEADER_LEN];
        let got = read_full(&mut self.input, &mut fixed)?;
        if got == 0 {
            return Ok(false);
        }
        let corrupt = |why: String| Error::CorruptFrame { offset: start, why };
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
        let mut stored = vec![0u8; fh.stored_len as usize];
        let got_payload = read_full(&mut self.input, &mut stored)?;
        if got_payload < stored.len() {
            self.torn_bytes = (FRAME_HEADER_LEN + got_payload) as u64;
            return Ok(false);
        }
        self.offset += (FRAME_HEADER_LEN + stored.len()) as u64;
        if crc32fast::hash(&stored) != fh.crc {
            return Err(corrupt("its checksum does not match".into()));
        }
        if self.names_only && self.version >= 4 && fh.flags & FLAG_NAMES == 0 {
            self.frames += 1;
            return Ok(true);
        }
        let raw = if fh.flags & FLAG_ZSTD != 0 {
            let raw = zstd::bulk::decompress(&stored, fh.raw_len as usize)
                .map_err(|e| corrupt(format!("it does not decompress: {e}")))?;
            if raw.len() != fh.raw_len as usize {
                return Err(corrupt("it decompresses to the wrong length".into()));
            }
            raw
        } else {
            stored
        };
        let mut cursor: &[u8] = &raw;
        let mut deltas = Deltas::default();
        let mut t = 0u64;
        while !cursor.is_empty() {
            let options = codec(cursor.len() as u64);
            let bad = |e: bincode::Error| corrupt(format!("an event does not decode: {e}"));
            let ev = if self.version == 1 {
                let WireV1(dt, tid, record) = options.deserialize_from(&mut cursor).map_err(bad)?;
                t = t.wrapping_add(dt as u64);
                Event { t, tid, record }
            } else {
                let (dt, dtid, record) = match crate::hot::decode(&mut cursor) {
                    Some(hot) => hot,
                    None => {
                        let WireOwned(dt, dtid, record) =
                            options.deserialize_from(&mut cursor).map_err(bad)?;
                        (dt, dtid, record)
                    }
                };
                let ev = deltas.decode(dt, dtid, record);
                let (record, freed) = self.frees.decode(ev.record).map_err(corrupt)?;
                if let Some(addr) = freed {
                    deltas.set_addr(addr);
                }
                Event { record, ..ev }
            };
            self.pending.push_back(ev);
        }
        self.frames += 1;
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
