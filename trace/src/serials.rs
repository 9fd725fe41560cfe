//! Frees by allocation serial (format version 5). Every `Alloc` event of a trace gets the next serial
//! number, in the order events are stored; a `Free` of an address the writer saw allocated is stored
//! as [`FreeBack`]: how many allocations ago it was made. A program's frees mostly follow a pattern in
//! that distance (a ring of buffers, a FIFO, a stack) that the compressor turns into almost nothing,
//! where the freed address itself is as random as the heap. The reader turns each `FreeBack` back
//! into the `Free` it stands for, so no consumer ever sees one.
//!
//! Both sides keep the same map of live allocations, across frames: the writer (inside the traced
//! process) by address, the reader by address and by serial, mirroring every change the writer
//! makes. The writer's map is capped at [`MAX_LIVE`] blocks (about 64 MiB at worst): allocations
//! beyond it are not indexed and their frees stay plain `Free`s, as does a free of a block allocated
//! before tracing began. The reader applies the same rule to the same map, so both agree on every
//! serial.
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

use crate::record::{Free, Record};

/// A free stored by distance: the block allocated `back` allocations before the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreeBack {
    /// The number of allocations since the freed one (1: the latest).
    pub back: u64,
    /// True when this is the free half of a realloc.
    pub realloc: bool,
}

/// The most live allocations indexed: the writer's map lives in the traced process.
pub const MAX_LIVE: usize = 2 << 20;

/// The writer's side: serials of the live allocations, by address.
#[derive(Default, Debug)]
pub struct FreeIndex {
    next: u64,
    by_addr: HashMap<u64, u64>,
}

/// Whether an allocation at `addr` is indexed: while the map has room, or in place of a block at the
/// same address whose free was never seen.
fn indexed(by_addr: &HashMap<u64, u64>, addr: u64) -> bool {
    by_addr.len() < MAX_LIVE || by_addr.contains_key(&addr)
}

impl FreeIndex {
    /// What to store for `record`: the record itself, or the `FreeBack` that replaces a free, with
    /// the freed address (the delta coder's new reference point).
    pub fn encode(&mut self, record: &Record) -> Option<(Record, u64)> {
        match record {
            Record::Alloc(a) => {
                if indexed(&self.by_addr, a.addr) {
                    self.by_addr.insert(a.addr, self.next);
                }
                self.next += 1;
                None
            }
            Record::Free(f) => {
                let serial = self.by_addr.remove(&f.addr)?;
                Some((
                    Record::FreeBack(FreeBack {
                        back: self.next - serial,
                        realloc: f.realloc,
                    }),
                    f.addr,
                ))
            }
            _ => None,
        }
    }
}

/// The reader's side: the writer's map, and the same allocations by serial.
#[derive(Default, Debug)]
pub struct FreeResolver {
    next: u64,
    by_addr: HashMap<u64, u64>,
    by_serial: HashMap<u64, u64>,
}

impl FreeResolver {
    /// Notes an allocation, or turns a `FreeBack` into its `Free` (with the freed address, the delta
    /// coder's new reference point). An error names a distance no live allocation is at.
    pub fn decode(&mut self, record: Record) -> Result<(Record, Option<u64>), String> {
        match record {
            Record::Alloc(ref a) => {
                if indexed(&self.by_addr, a.addr) {
                    if let Some(old) = self.by_addr.insert(a.addr, self.next) {
                        self.by_serial.remove(&old);
                    }
                    self.by_serial.insert(self.next, a.addr);
                }
                self.next += 1;
                Ok((record, None))
            }
            Record::FreeBack(f) => {
                let serial = self.next.checked_sub(f.back).ok_or_else(|| {
                    format!(
                        "a free refers to allocation {} back of {}",
                        f.back, self.next
                    )
                })?;
                let addr = self.by_serial.remove(&serial).ok_or_else(|| {
                    format!("a free refers to allocation #{serial}, which is not live")
                })?;
                self.by_addr.remove(&addr);
                Ok((
                    Record::Free(Free {
                        addr,
                        realloc: f.realloc,
                    }),
                    Some(addr),
                ))
            }
            // A plain free is of a block the writer had not indexed: not in this map either.
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
                r.decode(stored).unwrap().0
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
    fn beyond_the_cap_frees_stay_plain_on_both_sides() {
        let mut records: Vec<Record> = (0..MAX_LIVE as u64 + 2).map(|i| alloc(i * 16)).collect();
        records.push(free(0));
        records.push(free(MAX_LIVE as u64 * 16));
        records.push(alloc(0x9999_0000));
        records.push(free(0x9999_0000));
        let mut w = FreeIndex::default();
        let stored: Vec<Record> = records
            .iter()
            .map(|rec| w.encode(rec).map_or_else(|| rec.clone(), |(s, _)| s))
            .collect();
        let n = stored.len();
        assert!(
            matches!(stored[n - 4], Record::FreeBack(_)),
            "indexed: by distance"
        );
        assert!(
            matches!(stored[n - 3], Record::Free(_)),
            "not indexed: plain"
        );
        assert!(
            matches!(stored[n - 1], Record::FreeBack(_)),
            "room again after a free"
        );
        let mut r = FreeResolver::default();
        let back: Vec<Record> = stored.into_iter().map(|s| r.decode(s).unwrap().0).collect();
        assert_eq!(back, records);
    }
}
