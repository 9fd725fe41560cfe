//! Frees by allocation serial (format version 5). Every `Alloc` event of a trace gets the next serial
//! number, in the order events are stored; a `Free` of an address the writer saw allocated is stored
//! as [`FreeBack`]: how many allocations ago it was made. A program's frees mostly follow a pattern in
//! that distance (a ring of buffers, a FIFO, a stack) that the compressor turns into almost nothing,
//! where the freed address itself is as random as the heap. The reader turns each `FreeBack` back
//! into the `Free` it stands for, so no consumer ever sees one.
//!
//! The writer (inside the traced process) keeps the serials of live allocations by address, capped
//! at [`MAX_LIVE`] blocks (about 64 MiB at worst); the reader keeps only the addresses of the last
//! [`WINDOW`] allocations, in a ring (8 MiB). A free is stored by distance only when its block is
//! indexed and within the window; otherwise (a block allocated before tracing began, one beyond the
//! cap, one allocated long ago) it stays a plain `Free`, which needs nothing from the ring. Entries the
//! writer no longer refers to (a block freed by a plain free, an address allocated again without a
//! free seen) just age out of the ring.

use crate::record::{Free, FreeBack, Record};
use crate::serial_table::SerialTable;

/// The most live allocations indexed: the writer's map lives in the traced process.
pub const MAX_LIVE: usize = 2 << 20;

/// How far back a free can refer by distance: the reader's ring of recent allocations.
pub const WINDOW: u64 = 1 << 20;

/// The writer's side: serials of the live allocations, by address.
#[derive(Default, Debug)]
pub struct FreeIndex {
    next: u64,
    by_addr: SerialTable,
}

impl FreeIndex {
    /// Allocations indexed so far: the serial the next one gets.
    pub fn next_serial(&self) -> u64 {
        self.next
    }

    /// What to store for `record`: the record itself, or the `FreeBack` that replaces a free, with
    /// the freed address (the delta coder's new reference point).
    pub fn encode(&mut self, record: &Record) -> Option<(Record, u64)> {
        match record {
            Record::Alloc(a) => {
                self.alloc(a.addr);
                None
            }
            Record::Free(f) => Some((
                Record::FreeBack(FreeBack {
                    back: self.free(f.addr)?,
                    realloc: f.realloc,
                }),
                f.addr,
            )),
            _ => None,
        }
    }

    /// Notes an allocation at `addr`. It is indexed while the table has room, or in place of a
    /// block at the same address whose free was never seen.
    pub fn alloc(&mut self, addr: u64) {
        self.by_addr.set(addr, self.next, MAX_LIVE);
        self.next += 1;
    }

    /// A free of `addr`: how many allocations back its block was made, when it is indexed and
    /// within the window (it is then stored by distance), or `None` (stored by address).
    pub fn free(&mut self, addr: u64) -> Option<u64> {
        let serial = self.by_addr.remove(addr)?;
        let back = self.next - serial;
        (back <= WINDOW).then_some(back)
    }

    /// Where the lookup of `addr` starts (see [`SerialTable::home_slot`]).
    pub fn home_slot(&self, addr: u64) -> &(u64, u64) {
        self.by_addr.home_slot(addr)
    }
}

/// The reader's side: the addresses of the last `WINDOW` allocations, by serial.
#[derive(Default, Debug)]
pub struct FreeResolver {
    next: u64,
    ring: Vec<u64>,
    /// True once frames were lost (see [`FreeResolver::skip_to`]): a free by distance may then refer
    /// to an allocation that was never read.
    after_loss: bool,
}

impl FreeResolver {
    /// Allocations seen so far.
    pub fn next_serial(&self) -> u64 {
        self.next
    }

    /// Notes an allocation whose address is unknown (see [`FreeResolver::skip_to`]): it keeps its
    /// serial, and a free that refers to it is unresolved.
    pub fn unknown_alloc(&mut self) {
        let slot = (self.next % WINDOW) as usize;
        if slot == self.ring.len() {
            self.ring.push(0);
        } else {
            self.ring[slot] = 0;
        }
        self.next += 1;
    }

    /// Frames were lost: the next frame begins at allocation `serial`. The allocations in between
    /// were never read; their slots are forgotten so that no free resolves to an older block.
    pub fn skip_to(&mut self, serial: u64) {
        self.after_loss = true;
        if serial <= self.next {
            return;
        }
        if serial - self.next >= WINDOW {
            self.ring.iter_mut().for_each(|a| *a = 0);
        } else {
            for s in self.next..serial {
                if let Some(slot) = self.ring.get_mut((s % WINDOW) as usize) {
                    *slot = 0;
                }
            }
        }
        // Slots past the ring's end are filled with zeros, so the ring stays indexed by serial.
        let want = serial.min(WINDOW) as usize;
        if self.ring.len() < want {
            self.ring.resize(want, 0);
        }
        self.next = serial;
    }

    /// Notes an allocation, or turns a `FreeBack` into its `Free` (with the freed address, the delta
    /// coder's new reference point). An error names a distance no live allocation is at; after lost
    /// frames such a free is `Ok(None)` instead (its block was in a frame that was never read).
    pub fn decode(&mut self, record: Record) -> Result<Option<(Record, Option<u64>)>, String> {
        let after_loss = self.after_loss;
        match self.resolve(record) {
            Ok(r) => Ok(Some(r)),
            Err(_) if after_loss => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn resolve(&mut self, record: Record) -> Result<(Record, Option<u64>), String> {
        match record {
            Record::Alloc(ref a) => {
                let slot = (self.next % WINDOW) as usize;
                // The ring grows to its full size only in traces that allocate that much.
                if slot == self.ring.len() {
                    self.ring.push(a.addr);
                } else {
                    self.ring[slot] = a.addr;
                }
                self.next += 1;
                Ok((record, None))
            }
            Record::FreeBack(f) => {
                let gone = || {
                    format!(
                        "a free refers to allocation {} back of {}",
                        f.back, self.next
                    )
                };
                if f.back == 0 || f.back > WINDOW || f.back > self.next {
                    return Err(gone());
                }
                let slot = ((self.next - f.back) % WINDOW) as usize;
                let addr = std::mem::take(&mut self.ring[slot]);
                if addr == 0 {
                    return Err(format!("{}, which was already freed", gone()));
                }
                Ok((
                    Record::Free(Free {
                        addr,
                        realloc: f.realloc,
                    }),
                    Some(addr),
                ))
            }
            other => Ok((other, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Alloc, AllocFn};

    fn alloc(addr: u64) -> Record {
        Record::Alloc(Alloc {
            func: AllocFn::Malloc,
            addr,
            size: 8,
            stack: 0,
        })
    }

    fn free(addr: u64) -> Record {
        Record::Free(Free {
            addr,
            realloc: false,
        })
    }

    /// Writes and reads `records` through both sides; returns what the reader hands out.
    fn through(records: &[Record]) -> Vec<Record> {
        let (mut w, mut r) = (FreeIndex::default(), FreeResolver::default());
        records
            .iter()
            .map(|rec| {
                let stored = w.encode(rec).map_or_else(|| rec.clone(), |(s, _)| s);
                r.decode(stored).unwrap().unwrap().0
            })
            .collect()
    }

    #[test]
    fn a_reused_address_whose_free_was_missed_keeps_both_sides_in_step() {
        // 0x10 is allocated twice without a free between (the first free went unseen): the second
        // allocation replaces the first on both sides, and its free resolves to it.
        let records = [
            alloc(0x10),
            alloc(0x20),
            alloc(0x10),
            free(0x10),
            free(0x20),
            free(0x30),
        ];
        assert_eq!(through(&records), records);
    }

    #[test]
    fn a_block_older_than_the_window_is_freed_by_address() {
        let mut records: Vec<Record> = (1..=WINDOW + 1).map(|i| alloc(i * 16)).collect();
        records.push(free(16));
        records.push(free(32));
        let mut w = FreeIndex::default();
        let stored: Vec<Record> = records
            .iter()
            .map(|rec| w.encode(rec).map_or_else(|| rec.clone(), |(s, _)| s))
            .collect();
        let n = stored.len();
        assert!(
            matches!(stored[n - 2], Record::Free(_)),
            "WINDOW + 1 back: by address"
        );
        assert!(matches!(stored[n - 1], Record::FreeBack(FreeBack { back, .. }) if back == WINDOW));
        let mut r = FreeResolver::default();
        let back: Vec<Record> = stored
            .into_iter()
            .map(|s| r.decode(s).unwrap().unwrap().0)
            .collect();
        assert_eq!(back, records);
    }

    #[test]
    fn beyond_the_cap_frees_stay_plain_on_both_sides() {
        let cap = MAX_LIVE as u64;
        let mut records: Vec<Record> = (1..=cap + 2).map(|i| alloc(i * 16)).collect();
        records.push(free((cap + 1) * 16)); // allocated with the map full: not indexed
        records.push(free(cap * 16)); // the last one indexed, 3 allocations back
        records.push(alloc(0x9999_0000)); // room again
        records.push(free(0x9999_0000));
        let mut w = FreeIndex::default();
        let stored: Vec<Record> = records
            .iter()
            .map(|rec| w.encode(rec).map_or_else(|| rec.clone(), |(s, _)| s))
            .collect();
        let n = stored.len();
        assert!(
            matches!(stored[n - 4], Record::Free(_)),
            "not indexed: plain"
        );
        assert!(matches!(
            stored[n - 3],
            Record::FreeBack(FreeBack { back: 3, .. })
        ));
        assert!(matches!(
            stored[n - 1],
            Record::FreeBack(FreeBack { back: 1, .. })
        ));
        let mut r = FreeResolver::default();
        let back: Vec<Record> = stored
            .into_iter()
            .map(|s| r.decode(s).unwrap().unwrap().0)
            .collect();
        assert_eq!(back, records);
    }
}
