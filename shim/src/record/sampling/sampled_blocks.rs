//! The thin sampling mode's table of sampled live blocks, so that a free knows whether its block
//! was sampled (and must be recorded) although the draw was made at the allocation, independently
//! of the block's address.
//!
//! A fixed table in the library's zeroed data: the kernel backs only the pages entries land on. An
//! address lives in one slot of a short window that starts at its hash; a free finds it by reading
//! that window. Before it, a small table of counts by another part of the hash says how many sampled
//! blocks hash there: for nearly every free it is zero and the window is not read at all.
//!
//! Slots are claimed with a compare-and-swap and released with a store by the thread freeing the
//! block (one block is freed once, after its allocation, as the program orders it): no lock, no
//! allocation, nothing a traced thread may hold. A block whose realloc is under way is marked (its
//! address with the low bit set, which no heap block has) until the realloc ends, so that a thread
//! given that address meanwhile adds its own entry instead of taking this one.
//!
//! Never: allocate, block, or grow. When the window of a drawn block is full (far more sampled
//! blocks live at once than the table is for: [`SLOTS`] at the default mean is some 100 GB of live
//! heap) the block is not recorded, only counted, and the estimates lose it.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Slots of the table.
pub const SLOTS: usize = 1 << 18;
/// Slots an address may take, from the one its hash gives.
const WINDOW: usize = 16;
/// Counts by hash, the filter before the table.
const COUNTS: usize = 1 << 12;
/// The mark of a block whose realloc is under way.
const MOVING: u64 = 1;

static TABLE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static COUNT: [AtomicU32; COUNTS] = [const { AtomicU32::new(0) }; COUNTS];

/// The first slot of `addr`'s window and its count.
#[inline(always)]
fn places(addr: u64) -> (usize, &'static AtomicU32) {
    let h = crate::record::mix::mix(addr);
    let slot = (h >> (64 - SLOTS.trailing_zeros())) as usize;
    (slot, &COUNT[h as usize & (COUNTS - 1)])
}

/// The slot of `addr`'s window holding `value`.
#[inline(always)]
fn find(first: usize, value: u64) -> Option<&'static AtomicU64> {
    (0..WINDOW)
        .map(|i| &TABLE[(first + i) & (SLOTS - 1)])
        .find(|s| s.load(Ordering::Acquire) == value)
}

/// Notes the block at `addr` as sampled; false when its window is full (it is then not sampled).
pub fn insert(addr: u64) -> bool {
    let (first, count) = places(addr);
    count.fetch_add(1, Ordering::AcqRel);
    for i in 0..WINDOW {
        let s = &TABLE[(first + i) & (SLOTS - 1)];
        if s.load(Ordering::Relaxed) == 0
            && s.compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return true;
        }
    }
    count.fetch_sub(1, Ordering::AcqRel);
    false
}

/// The block at `addr` is being freed: true when it was a sampled one. A realloc's free only marks
/// it, until [`realloc_done`] or [`realloc_failed`].
#[inline(always)]
pub fn free(addr: u64, realloc: bool) -> bool {
    let (first, count) = places(addr);
    if count.load(Ordering::Acquire) == 0 {
        return false;
    }
    let Some(s) = find(first, addr) else {
        return false;
    };
    if realloc {
        s.store(addr | MOVING, Ordering::Release);
    } else {
        s.store(0, Ordering::Release);
        count.fetch_sub(1, Ordering::AcqRel);
    }
    true
}

/// The realloc of the block at `addr` moved or freed it: its mark goes.
#[inline(always)]
pub fn realloc_done(addr: u64) {
    let (first, count) = places(addr);
    if count.load(Ordering::Acquire) == 0 {
        return;
    }
    if let Some(s) = find(first, addr | MOVING) {
        s.store(0, Ordering::Release);
        count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The realloc of the block at `addr` failed: true when it is a sampled one, live again.
pub fn realloc_failed(addr: u64) -> bool {
    let (first, count) = places(addr);
    if count.load(Ordering::Acquire) == 0 {
        return false;
    }
    match find(first, addr | MOVING) {
        Some(s) => {
            s.store(addr, Ordering::Release);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_finds_exactly_the_sampled_blocks_and_a_realloc_keeps_its_own() {
        let base = 0x7e00_0000_0000u64;
        let blocks: Vec<u64> = (0..50_000u64).map(|i| base + 16 * i).collect();
        for &a in blocks.iter().step_by(3) {
            assert!(insert(a));
        }
        for (i, &a) in blocks.iter().enumerate() {
            assert_eq!(free(a, false), i % 3 == 0, "block {i}");
        }
        assert!(blocks.iter().all(|&a| !free(a, false)), "each entry went");
        // A realloc under way, that fails: the block is live again.
        let a = blocks[7];
        assert!(insert(a));
        assert!(free(a, true));
        assert!(!free(a, false), "the moving block is not a live one");
        assert!(realloc_failed(a));
        // One that moves: another block given that address meanwhile is a different entry.
        assert!(free(a, true));
        assert!(insert(a));
        realloc_done(a);
        assert!(!realloc_failed(a));
        assert!(free(a, false), "the other block at that address");
        assert!(!free(a, false));
    }

    #[test]
    fn threads_insert_and_free_their_own_blocks_together() {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                std::thread::spawn(move || {
                    let base = 0x6000_0000_0000u64 + (t << 36);
                    for round in 0..20u64 {
                        let addrs = (0..2000u64).map(|i| base + 16 * (i + round * 7));
                        let taken: Vec<u64> = addrs.filter(|a| insert(*a)).collect();
                        assert_eq!(taken.len(), 2000);
                        assert!(taken.iter().all(|&a| free(a, false)));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
    }
}
