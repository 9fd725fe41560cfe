//! Event frames in columns (format version 10). A heap trace is nearly all allocations and frees,
//! and stored event after event (rows) each one's time, thread, address, size and stack sit side by
//! side, so the compressor sees a mix it can model poorly. Here a frame's heap events are split
//! into one stream per field, each compressed as a run of like values: the malloc-heavy benchmark's
//! trace went from 6.7 to about 5 bytes an allocation, and zstd spends a sixth of the time on it.
//!
//! ```text
//! payload: events:leb128 len[STREAMS]:leb128 stream[STREAMS]
//! KINDS       a byte per event: its low half 0-8 an allocation (AllocFn's order), 9 a free by
//!             address, 10 the same as a realloc's free half, 11 a free by distance, 12 the same as
//!             a realloc's, 13 any other record; its high half the low 4 bits of the address
//!             difference of an allocation or free by address (0 for 16-byte aligned blocks)
//! DT, DTID    per heap event, the zig-zagged time (µs) and thread differences (see `delta`)
//! ADDR0/1     per allocation and free by address, the address difference without its low 4
//!             bits, zig-zagged: its low byte and its second byte ...
//! ADDR_REST   ... and the rest of it, shifted down 16 bits
//! SIZE0       per allocation, the low byte of the size requested ...
//! SIZE_REST   ... and the rest of it, shifted down 8 bits
//! STACK       per allocation, the stack id
//! BACK        per free by distance, the allocations back
//! OTHER_LEN   per other record, its row's length in bytes
//! OTHER       the other records as version 9 rows (`frame`: dt, dtid, record in bincode)
//! ```
//! Numbers are LEB128 varints. Addresses and sizes are split into bytes because their low bytes
//! are nearly random and their high bytes nearly constant: apart, the compressor codes each with
//! the bits it needs (an address took 2.7 bytes where its varint took 3.1). The delta coder's
//! running values pass through the events in their order, rows and columns alike, so
//! [`ColumnEvents`] gives back exactly the stored events a version 9 writer's rows hold: the reader
//! resolves those as before.
use crate::record::{Alloc, AllocFn, Free, FreeBack, Record};

const KINDS: usize = 0;
const DT: usize = 1;
const DTID: usize = 2;
const ADDR0: usize = 3;
const ADDR1: usize = 4;
const ADDR_REST: usize = 5;
const SIZE0: usize = 6;
const SIZE_REST: usize = 7;
const STACK: usize = 8;
const BACK: usize = 9;
const OTHER_LEN: usize = 10;
const OTHER: usize = 11;
const STREAMS: usize = 12;

/// The allocation functions, by the kind byte (AllocFn's order).
const ALLOC_FNS: [AllocFn; 9] = [
    AllocFn::Malloc,
    AllocFn::Calloc,
    AllocFn::Realloc,
    AllocFn::Reallocarray,
    AllocFn::PosixMemalign,
    AllocFn::AlignedAlloc,
    AllocFn::Memalign,
    AllocFn::Valloc,
    AllocFn::Pvalloc,
];
const FREE: u8 = 9;
const FREE_BACK: u8 = 11;
const OTHER_KIND: u8 = 13;

/// The most events a frame of columns holds: a heap event's row takes at most 31 bytes, so the
/// rows that readers of format 10 before [`ColumnEvents`] rebuild stay within
/// [`MAX_FRAME_LEN`](crate::MAX_FRAME_LEN) with the other records' rows (at most half of it, see
/// `TraceWriter`).
pub const MAX_EVENTS: u64 = 1 << 19;

/// A frame's events being gathered in columns.
#[derive(Default, Debug)]
pub struct Columns {
    events: u64,
    streams: [Vec<u8>; STREAMS],
}

impl Columns {
    /// Events gathered.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes gathered.
    pub fn len(&self) -> usize {
        self.streams.iter().map(Vec::len).sum()
    }

    /// Adds an allocation; `addr_delta` is the delta coder's stored difference.
    pub fn alloc(&mut self, dt: i64, dtid: i64, a: &Alloc, addr_delta: u64) {
        let low = self.addr(addr_delta);
        self.heap_event(a.func as u8 | low, dt, dtid);
        self.streams[SIZE0].push(a.size as u8);
        put(&mut self.streams[SIZE_REST], a.size >> 8);
        put(&mut self.streams[STACK], u64::from(a.stack));
    }

    /// Adds a free by address.
    pub fn free(&mut self, dt: i64, dtid: i64, addr_delta: u64, realloc: bool) {
        let low = self.addr(addr_delta);
        self.heap_event((FREE + u8::from(realloc)) | low, dt, dtid);
    }

    /// Adds a free by distance.
    pub fn free_back(&mut self, dt: i64, dtid: i64, f: &FreeBack) {
        self.heap_event(FREE_BACK + u8::from(f.realloc), dt, dtid);
        put(&mut self.streams[BACK], f.back);
    }

    /// Stores a zig-zagged address difference but its low 4 bits, which it returns in the high
    /// half of a kind byte.
    fn addr(&mut self, addr_delta: u64) -> u8 {
        let d = unzig(addr_delta);
        let high = zig(d >> 4);
        self.streams[ADDR0].push(high as u8);
        self.streams[ADDR1].push((high >> 8) as u8);
        put(&mut self.streams[ADDR_REST], high >> 16);
        ((d & 15) as u8) << 4
    }

    /// Adds any other record, as its version 9 row.
    pub fn other(&mut self, row: &[u8]) {
        self.events += 1;
        self.streams[KINDS].push(OTHER_KIND);
        put(&mut self.streams[OTHER_LEN], row.len() as u64);
        self.streams[OTHER].extend_from_slice(row);
    }

    fn heap_event(&mut self, kind: u8, dt: i64, dtid: i64) {
        self.events += 1;
        self.streams[KINDS].push(kind);
        put(&mut self.streams[DT], zig(dt));
        put(&mut self.streams[DTID], zig(dtid));
    }

    /// Appends the frame's payload to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        put(out, self.events);
        for s in &self.streams {
            put(out, s.len() as u64);
        }
        for s in &self.streams {
            out.extend_from_slice(s);
        }
    }

    /// Starts a new frame.
    pub fn clear(&mut self) {
        self.events = 0;
        self.streams.iter_mut().for_each(Vec::clear);
    }
}

/// What one event of a columns payload is stored as.
#[derive(Debug, PartialEq)]
pub enum Stored<'p> {
    /// A heap event: the time and thread differences and the record, its address as the delta
    /// coder's difference: what [`hot::decode`] gives for its version 9 row.
    Heap(i64, i64, Record),
    /// Any other record: its version 9 row.
    Other(&'p [u8]),
}

/// Reads a columns payload event by event, straight from its columns: the reader's path, which
/// never rebuilds the rows (writing each heap event as a row only to decode it again had been a
/// quarter of a heap report's decoding). Holds positions, not the payload, so that the frame that
/// owns the payload can hold it too; every call must be given the same payload.
#[derive(Debug)]
pub struct ColumnEvents {
    at: [usize; STREAMS],
    end: [usize; STREAMS],
}

impl ColumnEvents {
    /// Checks a payload's counts and column lengths; an error says what is wrong with them.
    pub fn open(payload: &[u8]) -> Result<Self, String> {
        let mut head = Cursor(payload);
        let events = head.u64().ok_or("its column counts are cut short")?;
        let mut lens = [0usize; STREAMS];
        for len in &mut lens {
            *len = head
                .u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("its column lengths are cut short")?;
        }
        let mut at = [0usize; STREAMS];
        let mut end = [0usize; STREAMS];
        let mut pos = payload.len() - head.0.len();
        for i in 0..STREAMS {
            if lens[i] > payload.len() - pos {
                return Err("a column is longer than the frame".into());
            }
            at[i] = pos;
            pos += lens[i];
            end[i] = pos;
        }
        if pos != payload.len() || lens[KINDS] as u64 != events {
            return Err("its columns do not add up to the frame".into());
        }
        Ok(ColumnEvents { at, end })
    }

    /// The next event and the bytes of columns it took, or `None` after the last (once every
    /// column is found used up: one that holds more than its events is an error).
    #[inline]
    pub fn next<'p>(&mut self, p: &'p [u8]) -> Result<Option<(Stored<'p>, usize)>, String> {
        let before: usize = self.at.iter().sum();
        let Some(byte) = self.byte(p, KINDS) else {
            if (1..STREAMS).any(|i| self.at[i] != self.end[i]) {
                return Err("a column holds more than its events".into());
            }
            return Ok(None);
        };
        let stored = self.event(p, byte)?;
        let after: usize = self.at.iter().sum();
        Ok(Some((stored, after - before)))
    }

    fn event<'p>(&mut self, p: &'p [u8], byte: u8) -> Result<Stored<'p>, String> {
        let cut = || "a column ends before its events do".to_string();
        let kind = byte & 15;
        if kind == OTHER_KIND && byte >> 4 == 0 {
            let len = self
                .varint(p, OTHER_LEN)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(cut)?;
            let row = self.take(p, OTHER, len).ok_or_else(cut)?;
            return Ok(Stored::Other(row));
        }
        if kind > OTHER_KIND || (byte >> 4 != 0 && kind > 10) {
            return Err(format!("an event has the unknown kind {byte}"));
        }
        let dt = unzig(self.varint(p, DT).ok_or_else(cut)?);
        let dtid = unzig(self.varint(p, DTID).ok_or_else(cut)?);
        let record = match kind {
            0..=8 => {
                let addr = self.addr(p, byte).ok_or_else(cut)?;
                let size0 = self.byte(p, SIZE0).ok_or_else(cut)?;
                let size_rest = self.varint(p, SIZE_REST).ok_or_else(cut)?;
                Record::Alloc(Alloc {
                    func: ALLOC_FNS[usize::from(kind)],
                    addr,
                    size: size_rest.checked_mul(256).ok_or("a size is out of range")?
                        | u64::from(size0),
                    stack: self
                        .varint(p, STACK)
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or("a stack id is out of range")?,
                })
            }
            9 | 10 => Record::Free(Free {
                addr: self.addr(p, byte).ok_or_else(cut)?,
                realloc: kind == 10,
            }),
            _ => Record::FreeBack(FreeBack {
                back: self.varint(p, BACK).ok_or_else(cut)?,
                realloc: kind == 12,
            }),
        };
        Ok(Stored::Heap(dt, dtid, record))
    }

    /// The address difference of an allocation or a free by address, as the rows store it.
    #[inline]
    fn addr(&mut self, p: &[u8], kind_byte: u8) -> Option<u64> {
        let high = u64::from(self.byte(p, ADDR0)?)
            | u64::from(self.byte(p, ADDR1)?) << 8
            | self.varint(p, ADDR_REST)?.checked_mul(1 << 16)?;
        let d = unzig(high).checked_mul(16)? | i64::from(kind_byte >> 4);
        Some(zig(d))
    }

    #[inline]
    fn byte(&mut self, p: &[u8], column: usize) -> Option<u8> {
        let at = self.at[column];
        if at >= self.end[column] {
            return None;
        }
        self.at[column] = at + 1;
        p.get(at).copied()
    }

    #[inline]
    fn varint(&mut self, p: &[u8], column: usize) -> Option<u64> {
        let mut c = Cursor(p.get(self.at[column]..self.end[column])?);
        let v = c.u64()?;
        self.at[column] = self.end[column] - c.0.len();
        Some(v)
    }

    fn take<'p>(&mut self, p: &'p [u8], column: usize, n: usize) -> Option<&'p [u8]> {
        let at = self.at[column];
        let row = p.get(at..self.end[column])?.get(..n)?;
        self.at[column] = at + n;
        Some(row)
    }
}

/// LEB128.
#[inline]
fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zig(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzig(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// A cursor over one column.
#[derive(Default)]
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    /// A LEB128 varint; `None` when cut short or longer than a u64.
    #[inline]
    fn u64(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for (i, &b) in self.0.iter().enumerate().take(10) {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == 9 && b > 1 {
                    return None;
                }
                self.0 = &self.0[i + 1..];
                return Some(v);
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
