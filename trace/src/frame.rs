//! Framing: how batches of events and the header are laid out in the byte stream.
//!
//! ```text
//! preamble: MAGIC[8] version:u32 header_len:u32 header_crc:u32 header[header_len]
//! frame:    0xF7 flags:u8 stored_len:u32 raw_len:u32 crc:u32 [seq:u64 serial:u64] payload[stored_len]
//!           flags: 1 zstd-compressed; 2 (version 4) names only: stacks, modules, symbols, Python code
//!           objects and the end, written after the event frame of the same flush
//!           4 (version 10) the events are in columns (see `columns`)
//!           seq, serial (version 8): the frame's number in the trace (0, 1, 2, ...) and the number of
//!           allocations stored before it (see `serials`), so that a reader can tell a duplicated
//!           frame (a number seen already) and lost ones (a gap) and resume the serials after a gap
//! payload:  (dt:i64 dtid:i64 record)* bincode varints, delta-coded within the frame (see `delta`);
//!           version 1 frames hold (dt:i64 tid:u32 record)* with only the time delta-coded
//! ```
//! All fixed-width integers are little-endian. `crc` is the CRC-32 of the payload as stored, preceded
//! (version 8) by the 16 bytes of `seq` and `serial`.
use bincode::Options;
use serde::{Deserialize, Serialize};

use crate::record::Record;

/// The byte that opens every frame.
pub const FRAME_MARKER: u8 = 0xF7;
/// Frame flag: the payload is zstd-compressed.
pub const FLAG_ZSTD: u8 = 1;
/// Frame flag (version 4): the frame holds only records that name things (see
/// [`Record::names_frames`](crate::Record::names_frames)); every other record is in frames without it.
pub const FLAG_NAMES: u8 = 2;
/// Frame flag (version 10): the events are stored in columns (see `columns`), which read back as
/// the rows of a version 9 frame.
pub const FLAG_COLUMNS: u8 = 4;
/// The first format version whose event frames are written in columns.
pub const COLUMNS_VERSION: u32 = 10;
/// Bytes of a frame before its payload, up to version 7.
pub const FRAME_HEADER_LEN: usize = 14;
/// Bytes of a frame's sequence number and allocation serial (version 8), after the fixed part.
pub const FRAME_SEQ_LEN: usize = 16;
/// The first format version whose frames carry a sequence number.
pub const SEQ_VERSION: u32 = 8;
/// The largest payload a frame may hold, stored or raw; anything larger is corruption.
pub const MAX_FRAME_LEN: u32 = 64 << 20;
/// The most encoded bytes one record may take. The largest records the shim writes are chunks of
/// 4096 symbols (a few MiB with long C++ names); a record claiming more is corruption. This bounds
/// what one decoded record can cost: a crafted list of empty elements is the worst case, about 20
/// bytes of memory per encoded byte.
pub const MAX_RECORD_BYTES: u64 = 16 << 20;
/// Bytes of the preamble before the header.
pub const PREAMBLE_LEN: usize = 20;

/// The bincode options used for every payload: varints, little-endian, bounded.
pub fn codec(limit: u64) -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .allow_trailing_bytes()
        .with_limit(limit)
}

/// One event as it is stored (version 2): time, thread and address as deltas.
#[derive(Serialize)]
pub struct WireRef<'a>(pub i64, pub i64, pub &'a Record);

/// One event as version 2 stores it.
#[derive(Deserialize)]
pub struct WireOwned(pub i64, pub i64, pub Record);

/// One event as version 1 stored it: only the time was a delta.
#[derive(Deserialize)]
pub struct WireV1(pub i64, pub u32, pub Record);

/// The fixed part of a frame.
pub struct FrameHeader {
    pub flags: u8,
    pub stored_len: u32,
    pub raw_len: u32,
    pub crc: u32,
}

/// A frame's place in the trace (version 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameSeq {
    /// The frame's number: 0 for the first frame of a trace, one more for each frame after it.
    pub seq: u64,
    /// Allocations stored in the frames before this one.
    pub serial: u64,
}

impl FrameSeq {
    pub fn encode(&self) -> [u8; FRAME_SEQ_LEN] {
        let mut b = [0u8; FRAME_SEQ_LEN];
        b[..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..].copy_from_slice(&self.serial.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; FRAME_SEQ_LEN]) -> Self {
        let (seq, serial) = b.split_at(8);
        FrameSeq {
            seq: u64::from_le_bytes(seq.try_into().unwrap_or_default()),
            serial: u64::from_le_bytes(serial.try_into().unwrap_or_default()),
        }
    }
}

/// The checksum a frame stores: over its sequence bytes (version 8, else none) and its payload.
pub fn frame_crc(seq: Option<&[u8; FRAME_SEQ_LEN]>, stored: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if let Some(seq) = seq {
        h.update(seq);
    }
    h.update(stored);
    h.finalize()
}

impl FrameHeader {
    pub fn encode(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        b[0] = FRAME_MARKER;
        b[1] = self.flags;
        b[2..6].copy_from_slice(&self.stored_len.to_le_bytes());
        b[6..10].copy_from_slice(&self.raw_len.to_le_bytes());
        b[10..14].copy_from_slice(&self.crc.to_le_bytes());
        b
    }

    /// Parses and validates the fixed part; the error says what is wrong.
    pub fn decode(b: &[u8; FRAME_HEADER_LEN]) -> Result<Self, String> {
        if b[0] != FRAME_MARKER {
            return Err(format!(
                "expected a frame marker 0x{FRAME_MARKER:02x}, found 0x{:02x}",
                b[0]
            ));
        }
        let h = FrameHeader {
            flags: b[1],
            stored_len: u32::from_le_bytes([b[2], b[3], b[4], b[5]]),
            raw_len: u32::from_le_bytes([b[6], b[7], b[8], b[9]]),
            crc: u32::from_le_bytes([b[10], b[11], b[12], b[13]]),
        };
        if h.flags & !(FLAG_ZSTD | FLAG_NAMES | FLAG_COLUMNS) != 0 {
            return Err(format!("unknown frame flags 0x{:02x}", h.flags));
        }
        if h.stored_len > MAX_FRAME_LEN || h.raw_len > MAX_FRAME_LEN {
            return Err(format!(
                "a frame claims {} stored and {} raw bytes, more than the {} a frame may hold",
                h.stored_len, h.raw_len, MAX_FRAME_LEN
            ));
        }
        if h.flags & FLAG_ZSTD == 0 && h.stored_len != h.raw_len {
            return Err("an uncompressed frame's stored and raw lengths differ".into());
        }
        Ok(h)
    }
}
