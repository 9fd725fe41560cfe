//! A hand-written codec for the stored events that make up nearly all of a heap trace: `Alloc`,
//! `Free` and `FreeBack`. It reads and writes exactly the bytes bincode's varint encoding has for
//! them (see `frame::codec`), several times faster than going through serde: the shim's writer
//! encodes every heap event with it, and the reader decodes them. Anything else, and anything
//! malformed, the decoder declines without consuming input, so the caller decodes that event with
//! serde as before: every other record kind, any kind added later, and every error message stay
//! serde's.
use crate::record::{Alloc, AllocFn, Free, FreeBack, Record};

/// bincode's variant indices of the records decoded here (their place in [`Record`]).
const ALLOC: u32 = 0;
const FREE: u32 = 1;
const FREE_BACK: u32 = 37;

/// Decodes one stored version-2 event `(dt, dtid, record)` from the front of `input` and advances
/// past it; `None` (with `input` untouched) when it is not one of the hot kinds or is malformed.
pub fn decode(input: &mut &[u8]) -> Option<(i64, i64, Record)> {
    let mut r = Bytes(input);
    let dt = r.i64()?;
    let dtid = r.i64()?;
    let record = match r.u32()? {
        ALLOC => Record::Alloc(Alloc {
            func: alloc_fn(r.u32()?)?,
            addr: r.u64()?,
            size: r.u64()?,
            stack: r.u32()?,
        }),
        FREE => Record::Free(Free {
            addr: r.u64()?,
            realloc: r.bool()?,
        }),
        FREE_BACK => Record::FreeBack(FreeBack {
            back: r.u64()?,
            realloc: r.bool()?,
        }),
        _ => return None,
    };
    *input = r.0;
    Some((dt, dtid, record))
}

/// Appends a stored allocation: time and thread differences, then the record with its address as
/// the delta coder's difference.
pub fn encode_alloc(out: &mut Vec<u8>, dt: i64, dtid: i64, a: &Alloc, addr_delta: u64) {
    put_i64(out, dt);
    put_i64(out, dtid);
    put_u64(out, u64::from(ALLOC));
    put_u64(out, a.func as u64);
    put_u64(out, addr_delta);
    put_u64(out, a.size);
    put_u64(out, u64::from(a.stack));
}

/// Appends a stored free by address (its difference, as for [`encode_alloc`]).
pub fn encode_free(out: &mut Vec<u8>, dt: i64, dtid: i64, addr_delta: u64, realloc: bool) {
    put_i64(out, dt);
    put_i64(out, dtid);
    put_u64(out, u64::from(FREE));
    put_u64(out, addr_delta);
    out.push(u8::from(realloc));
}

/// Appends a stored free by allocation distance.
pub fn encode_free_back(out: &mut Vec<u8>, dt: i64, dtid: i64, f: &FreeBack) {
    put_i64(out, dt);
    put_i64(out, dtid);
    put_u64(out, u64::from(FREE_BACK));
    put_u64(out, f.back);
    out.push(u8::from(f.realloc));
}

/// bincode's varint (see [`Bytes::u64`]).
#[inline]
fn put_u64(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v <= u64::from(u16::MAX) {
        out.push(251);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v <= u64::from(u32::MAX) {
        out.push(252);
        out.extend_from_slice(&(v as u32).to_le_bytes());
    } else {
        out.push(253);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Zig-zag over the varint, as bincode stores signed integers.
#[inline]
fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The allocation function of variant index `i`, in [`AllocFn`]'s order.
fn alloc_fn(i: u32) -> Option<AllocFn> {
    Some(match i {
        0 => AllocFn::Malloc,
        1 => AllocFn::Calloc,
        2 => AllocFn::Realloc,
        3 => AllocFn::Reallocarray,
        4 => AllocFn::PosixMemalign,
        5 => AllocFn::AlignedAlloc,
        6 => AllocFn::Memalign,
        7 => AllocFn::Valloc,
        8 => AllocFn::Pvalloc,
        _ => return None,
    })
}

/// A cursor over bincode's varint encoding.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take::<1>().map(|[b]| b)
    }

    /// bincode's varint: values below 251 in one byte, else a marker byte (251, 252, 253) and the
    /// value as a little-endian u16, u32 or u64.
    fn u64(&mut self) -> Option<u64> {
        match self.byte()? {
            b @ 0..=250 => Some(u64::from(b)),
            251 => self.take().map(|b| u64::from(u16::from_le_bytes(b))),
            252 => self.take().map(|b| u64::from(u32::from_le_bytes(b))),
            253 => self.take().map(u64::from_le_bytes),
            _ => None,
        }
    }

    fn u32(&mut self) -> Option<u32> {
        self.u64()?.try_into().ok()
    }

    /// Zig-zag over the varint, as bincode stores signed integers.
    fn i64(&mut self) -> Option<i64> {
        let z = self.u64()?;
        Some((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use bincode::Options;

    use super::*;
    use crate::frame::{codec, WireOwned, WireRef};

    /// Values at every boundary of the varint's widths.
    const EDGES: [u64; 10] = [
        0,
        1,
        250,
        251,
        0xffff,
        0x1_0000,
        u32::MAX as u64,
        1 << 32,
        u64::MAX - 1,
        u64::MAX,
    ];

    fn stored(dt: i64, dtid: i64, record: &Record) -> Vec<u8> {
        codec(u64::MAX)
            .serialize(&WireRef(dt, dtid, record))
            .expect("encodes")
    }

    fn hot_records() -> Vec<Record> {
        let mut records = Vec::new();
        for (i, &v) in EDGES.iter().enumerate() {
            let func = alloc_fn(i as u32 % 9).expect("nine functions");
            let stack = (v % (u64::from(u32::MAX) + 1)) as u32;
            records.push(Record::Alloc(Alloc {
                func,
                addr: v,
                size: EDGES[EDGES.len() - 1 - i],
                stack,
            }));
            let realloc = i % 2 == 0;
            records.push(Record::Free(Free { addr: v, realloc }));
            records.push(Record::FreeBack(FreeBack { back: v, realloc }));
        }
        records
    }

    #[test]
    fn reads_every_hot_kind_as_serde_writes_it() {
        let deltas = [0, 1, -1, 125, -126, i64::MAX, i64::MIN, 1 << 40];
        for record in hot_records() {
            for (dt, dtid) in deltas.iter().zip(deltas.iter().rev()) {
                let bytes = stored(*dt, *dtid, &record);
                let mut with_more = bytes.clone();
                with_more.extend_from_slice(&[7, 7]);
                let mut input = &with_more[..];
                assert_eq!(decode(&mut input), Some((*dt, *dtid, record.clone())));
                assert_eq!(input, [7, 7], "stops at the end of the event");
                let WireOwned(sdt, sdtid, srecord) = codec(bytes.len() as u64)
                    .deserialize(&bytes)
                    .expect("decodes");
                assert_eq!((sdt, sdtid, srecord), (*dt, *dtid, record.clone()));
            }
        }
    }

    #[test]
    fn writes_every_hot_kind_as_serde_writes_it() {
        let deltas = [0, 1, -1, 125, -126, i64::MAX, i64::MIN, 1 << 40];
        for record in hot_records() {
            for (dt, dtid) in deltas.iter().zip(deltas.iter().rev()) {
                let mut out = vec![9];
                match &record {
                    Record::Alloc(a) => encode_alloc(&mut out, *dt, *dtid, a, a.addr),
                    Record::Free(f) => encode_free(&mut out, *dt, *dtid, f.addr, f.realloc),
                    Record::FreeBack(f) => encode_free_back(&mut out, *dt, *dtid, f),
                    _ => unreachable!("only hot kinds"),
                }
                assert_eq!(out[0], 9, "appends");
                assert_eq!(out[1..], stored(*dt, *dtid, &record), "{record:?}");
            }
        }
    }

    #[test]
    fn declines_other_kinds_and_torn_or_malformed_events_without_consuming() {
        let others = [
            Record::Dropped(5),
            Record::Sampling(1 << 20),
            Record::ReallocFailed(crate::record::ReallocFailed { addr: 16 }),
        ];
        for record in &others {
            let bytes = stored(3, 0, record);
            let mut input = &bytes[..];
            assert_eq!(decode(&mut input), None);
            assert_eq!(input.len(), bytes.len());
        }
        for record in hot_records() {
            let bytes = stored(1, 0, &record);
            for cut in 0..bytes.len() {
                let mut input = &bytes[..cut];
                assert_eq!(decode(&mut input), None, "{record:?} cut at {cut}");
                assert_eq!(input.len(), cut);
            }
        }
        // A bool that is neither 0 nor 1, and an allocation function past the last.
        let mut bad_bool = stored(
            0,
            0,
            &Record::Free(Free {
                addr: 9,
                realloc: true,
            }),
        );
        *bad_bool.last_mut().expect("not empty") = 2;
        assert_eq!(decode(&mut &bad_bool[..]), None);
        let mut bad_func = stored(0, 0, &hot_records()[0]);
        bad_func[3] = 9;
        assert_eq!(decode(&mut &bad_func[..]), None);
    }
}
