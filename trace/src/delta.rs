//! Delta coding within a frame (format version 2). Times, thread ids and the addresses of heap and
//! mapping records are stored as differences from the previous event of the same frame: consecutive
//! events are close in time, mostly on one thread, and at nearby addresses, so the differences take
//! one to three bytes where absolute values take up to nine (bincode's varint spends nine bytes on
//! any value of 2^32 or more). Each frame starts from zero, so frames decode independently.
//!
//! Event times are stored to the microsecond: the nanoseconds below are scheduling noise that no
//! analysis uses, and they were the least compressible part of a heap event. (Durations, such as a
//! copy's `duration_ns`, are fields of their records and keep full precision.)
use crate::record::{Event, Record};

/// The running values of one frame.
#[derive(Default, Debug)]
pub struct Deltas {
    t: u64,
    tid: u32,
    addr: u64,
}

/// Zig-zag: small negative and positive differences become small unsigned numbers.
fn zig(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzig(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// The address field that is delta-coded, for records that have one.
pub fn addr_of(r: &mut Record) -> Option<&mut u64> {
    match r {
        Record::Alloc(a) => Some(&mut a.addr),
        Record::Free(f) => Some(&mut f.addr),
        Record::ReallocFailed(f) => Some(&mut f.addr),
        Record::Map(m) => Some(&mut m.addr),
        Record::Unmap(u) => Some(&mut u.addr),
        _ => None,
    }
}

impl Deltas {
    /// Starts a new frame.
    pub fn reset(&mut self) {
        *self = Deltas::default();
    }

    /// The stored form of `ev`: time difference, thread difference, and the record with its address
    /// replaced by the zig-zagged difference.
    pub fn encode(&mut self, ev: &Event) -> (i64, i64, Record) {
        let (dt, dtid) = self.step(ev.t, ev.tid);
        let mut record = ev.record.clone();
        if let Some(addr) = addr_of(&mut record) {
            *addr = self.addr(*addr);
        }
        (dt, dtid, record)
    }

    /// The stored time and thread differences of an event at `t` on `tid`, which become the
    /// reference for the next.
    pub fn step(&mut self, t: u64, tid: u32) -> (i64, i64) {
        // Wrapping differences reinterpreted as i64 round-trip exactly with wrapping_add.
        let us = t / 1000;
        let dt = us.wrapping_sub(self.t) as i64;
        let dtid = i64::from(tid) - i64::from(self.tid);
        self.t = us;
        self.tid = tid;
        (dt, dtid)
    }

    /// The stored (zig-zagged) difference of a record's address from the previous one, which it
    /// becomes.
    pub fn addr(&mut self, addr: u64) -> u64 {
        let d = addr.wrapping_sub(self.addr) as i64;
        self.addr = addr;
        zig(d)
    }

    /// Makes `addr` the reference for the next address difference: the address of a free stored by
    /// distance (see `serials`), which the next allocation often reuses.
    pub fn set_addr(&mut self, addr: u64) {
        self.addr = addr;
    }

    /// The event a stored (dt in µs, dtid, record) stands for.
    pub fn decode(&mut self, dt: i64, dtid: i64, mut record: Record) -> Event {
        self.t = self.t.wrapping_add(dt as u64);
        self.tid = (i64::from(self.tid) + dtid) as u32;
        if let Some(addr) = addr_of(&mut record) {
            self.addr = self.addr.wrapping_add(unzig(*addr) as u64);
            *addr = self.addr;
        }
        Event {
            t: self.t.wrapping_mul(1000),
            tid: self.tid,
            record,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for d in [0, 1, -1, 63, -64, i64::MAX, i64::MIN, 0x7fff_0000_1234] {
            assert_eq!(unzig(zig(d)), d);
        }
        assert_eq!(zig(-1), 1);
        assert_eq!(zig(1), 2);
    }
}
