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
//! running values pass through the events in their order, rows and columns alike, so [`to_rows`]
//! gives back exactly the rows a version 9 writer would have written: the reader decodes those as
//! before.
use crate::hot;
use crate::record::FreeBack;
use crate::record::{Alloc, AllocFn};

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
/// rows a reader rebuilds stay within [`MAX_FRAME_LEN`](crate::MAX_FRAME_LEN) with the other
/// records' rows (at most half of it, see `TraceWriter`).
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

/// Appends to `rows` the version 9 rows of the events of a columns `payload`; an error says what is
/// wrong with it. `rows` grows by at most `limit` bytes.
pub fn to_rows(payload: &[u8], rows: &mut Vec<u8>, limit: usize) -> Result<(), String> {
    let mut head = Cursor(payload);
    let events = head.u64().ok_or("its column counts are cut short")?;
    let mut lens = [0usize; STREAMS];
    for len in &mut lens {
        *len = head
            .u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or("its column lengths are cut short")?;
    }
    let mut rest = head.0;
    let mut s: [Cursor; STREAMS] = Default::default();
    for (cursor, &len) in s.iter_mut().zip(&lens) {
        if len > rest.len() {
            return Err("a column is longer than the frame".into());
        }
        let (this, after) = rest.split_at(len);
        *cursor = Cursor(this);
        rest = after;
    }
    if !rest.is_empty() || lens[KINDS] as u64 != events {
        return Err("its columns do not add up to the frame".into());
    }
    let cut = || "a column ends before its events do".to_string();
    let end = rows.len().saturating_add(limit);
    for &byte in s[KINDS].0 {
        let kind = byte & 15;
        let heap = kind < OTHER_KIND;
        let (dt, dtid) = if heap {
            let dt = s[DT].u64().ok_or_else(cut)?;
            let dtid = s[DTID].u64().ok_or_else(cut)?;
            (unzig(dt), unzig(dtid))
        } else {
            (0, 0)
        };
        if byte >> 4 != 0 && kind > 10 {
            return Err(format!("an event has the unknown kind {byte}"));
        }
        // The address difference of an allocation or a free by address.
        let mut addr = || -> Option<u64> {
            let high = u64::from(s[ADDR0].byte()?)
                | u64::from(s[ADDR1].byte()?) << 8
                | s[ADDR_REST].u64()?.checked_mul(1 << 16)?;
            let d = unzig(high).checked_mul(16)? | i64::from(byte >> 4);
            Some(zig(d))
        };
        match kind {
            0..=8 => {
                let addr = addr().ok_or_else(cut)?;
                let size0 = s[SIZE0].byte().ok_or_else(cut)?;
                let size_rest = s[SIZE_REST].u64().ok_or_else(cut)?;
                let a = Alloc {
                    func: ALLOC_FNS[usize::from(kind)],
                    addr: 0,
                    size: size_rest.checked_mul(256).ok_or("a size is out of range")?
                        | u64::from(size0),
                    stack: s[STACK]
                        .u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or("a stack id is out of range")?,
                };
                hot::encode_alloc(rows, dt, dtid, &a, addr);
            }
            9 | 10 => {
                let addr = addr().ok_or_else(cut)?;
                hot::encode_free(rows, dt, dtid, addr, kind == 10);
            }
            11 | 12 => {
                let f = FreeBack {
                    back: s[BACK].u64().ok_or_else(cut)?,
                    realloc: kind == 12,
                };
                hot::encode_free_back(rows, dt, dtid, &f);
            }
            OTHER_KIND => {
                let len = s[OTHER_LEN]
                    .u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(cut)?;
                let row = s[OTHER].take(len).ok_or_else(cut)?;
                rows.extend_from_slice(row);
            }
            _ => return Err(format!("an event has the unknown kind {byte}")),
        }
        if rows.len() > end {
            return Err("its events take more room than a frame may".into());
        }
    }
    if s.iter().skip(1).any(|c| !c.0.is_empty()) {
        return Err("a column holds more than its events".into());
    }
    Ok(())
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

    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
