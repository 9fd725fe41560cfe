//! The seen-stacks table: the stack hashes already sent to the writer, so that each distinct stack's
//! frames travel once. Open-addressing, insert-only, lock-free sets in anonymous mappings, touched
//! only where slots are used.
//!
//! It grows by levels: 2^20 slots (8 MiB of address space) first, then a level twice the size of
//! the last each time the newest is half full, up to four. A level is never moved or rehashed, so
//! growing takes no lock: a lookup probes the newest level first (the stacks a program makes now
//! were mostly first seen lately), then the older ones. A fixed table of 2^20 slots had filled in
//! `import torch` (1.16M distinct stacks) and from then on told every allocation to send its
//! frames again: a PyTorch training step on the CPU took 2.7-3.2x its bare time instead of 2.3x.
//! Two threads that insert one new hash into two levels as a level is added both send its frames;
//! the writer deduplicates, as it does when the last level is full.
//!
//! # Safety
//! Each level is a private, zero-filled, never-unmapped mapping whose length is a whole number of
//! `AtomicU64`s, published once with release ordering; viewing it as a `'static` slice of atomics
//! is sound.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The first level's slots.
const FIRST_SLOTS: usize = 1 << 20;
/// The most levels (2^20 + 2^21 + 2^22 + 2^23 slots, 120 MiB of address space at most).
const LEVELS: usize = 4;

/// The process's levels (a fork child keeps its parent's: see `stacks::new_epoch`).
static SEEN: Levels = Levels::new();

/// Maps the process's first level; without it every stack is sent whole.
pub fn install() {
    SEEN.install(FIRST_SLOTS, map);
}

/// True when `hash` is a stack the writer has not been sent yet.
#[inline]
pub fn first_sighting(hash: u64) -> bool {
    SEEN.first_sighting(hash, FIRST_SLOTS, map)
}

/// Maps `slots` zeroed slots (pages faulted in on use), or `None` if mapping fails.
fn map(slots: usize) -> Option<&'static [AtomicU64]> {
    let bytes = slots * std::mem::size_of::<AtomicU64>();
    let p = crate::sys::real::mmap(
        std::ptr::null_mut(),
        bytes,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
        0,
    );
    if p == libc::MAP_FAILED || p.is_null() {
        return None;
    }
    // SAFETY: see the module note: a fresh, zeroed, never-unmapped mapping of `slots` u64s.
    Some(unsafe { std::slice::from_raw_parts(p as *const AtomicU64, slots) })
}

/// The levels: each one's slots, once mapped, and how many it holds.
struct Levels {
    /// The address of each level's first slot (0 until mapped); level `i` has `first << i` slots.
    bases: [AtomicUsize; LEVELS],
    filled: [AtomicUsize; LEVELS],
    /// The newest level mapped.
    newest: AtomicUsize,
}

impl Levels {
    const fn new() -> Levels {
        Levels {
            bases: [const { AtomicUsize::new(0) }; LEVELS],
            filled: [const { AtomicUsize::new(0) }; LEVELS],
            newest: AtomicUsize::new(0),
        }
    }

    fn install(&self, first: usize, map: fn(usize) -> Option<&'static [AtomicU64]>) {
        if let Some(slots) = map(first) {
            let _ = self.bases[0].compare_exchange(
                0,
                slots.as_ptr() as usize,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    fn level(&self, i: usize, first: usize) -> Option<SeenTable> {
        let base = self.bases[i].load(Ordering::Acquire);
        if base == 0 {
            return None;
        }
        // SAFETY: a nonzero base was published (release) by `install` or `grow` from a mapping of
        // `first << i` slots that is never unmapped (see the module note).
        let slots = unsafe { std::slice::from_raw_parts(base as *const AtomicU64, first << i) };
        Some(SeenTable::new(slots))
    }

    fn first_sighting(
        &self,
        key: u64,
        first: usize,
        map: fn(usize) -> Option<&'static [AtomicU64]>,
    ) -> bool {
        let newest = self.newest.load(Ordering::Acquire);
        let Some(top) = self.level(newest, first) else {
            return true;
        };
        if (0..=newest)
            .rev()
            .filter_map(|i| self.level(i, first))
            .any(|t| t.contains(key))
        {
            return false;
        }
        match top.insert(key) {
            Insert::Present => false,
            Insert::Full => true,
            Insert::New => {
                let filled = self.filled[newest].fetch_add(1, Ordering::Relaxed) + 1;
                if filled > top.len() / 2 && newest + 1 < LEVELS {
                    self.grow(newest + 1, first, map);
                }
                true
            }
        }
    }

    /// Maps level `next` unless another thread has, then makes it the newest.
    fn grow(&self, next: usize, first: usize, map: fn(usize) -> Option<&'static [AtomicU64]>) {
        if self.bases[next].load(Ordering::Acquire) == 0 {
            let Some(slots) = map(first << next) else {
                return;
            };
            // A thread that lost the race leaves its mapping untouched (address space only): it
            // happens at most once per level.
            let _ = self.bases[next].compare_exchange(
                0,
                slots.as_ptr() as usize,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        self.newest.fetch_max(next, Ordering::AcqRel);
    }
}

/// What inserting a key found.
#[derive(Debug, PartialEq, Eq)]
enum Insert {
    New,
    Present,
    /// No free slot within reach.
    Full,
}

/// An open-addressing set of stack hashes, insert-only and lock-free.
pub struct SeenTable {
    slots: &'static [AtomicU64],
}

const MAX_PROBES: usize = 64;

impl SeenTable {
    /// A table over `slots`, whose length must be a power of two.
    pub fn new(slots: &'static [AtomicU64]) -> SeenTable {
        debug_assert!(slots.len().is_power_of_two());
        SeenTable { slots }
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when `key` is in the table.
    #[inline]
    fn contains(&self, key: u64) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (key as usize) & mask;
        for _ in 0..MAX_PROBES {
            match self.slots[i].load(Ordering::Acquire) {
                v if v == key => return true,
                0 => return false,
                _ => i = (i + 1) & mask,
            }
        }
        false
    }

    /// Puts `key` in the table.
    #[inline]
    fn insert(&self, key: u64) -> Insert {
        let mask = self.slots.len() - 1;
        let mut i = (key as usize) & mask;
        for _ in 0..MAX_PROBES {
            let slot = &self.slots[i];
            let v = slot.load(Ordering::Acquire);
            if v == key {
                return Insert::Present;
            }
            if v == 0 {
                match slot.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return Insert::New,
                    Err(found) if found == key => return Insert::Present,
                    Err(_) => {}
                }
            }
            i = (i + 1) & mask;
        }
        Insert::Full
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(n: usize) -> &'static [AtomicU64] {
        let v: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        Box::leak(v.into_boxed_slice())
    }

    fn table(n: usize) -> SeenTable {
        SeenTable::new(slots(n))
    }

    #[test]
    fn inserted_once_per_key_even_when_colliding_slots() {
        let t = table(8);
        assert_eq!(t.insert(3), Insert::New);
        assert_eq!(t.insert(3), Insert::Present);
        assert_eq!(t.insert(11), Insert::New); // same slot as 3, probes on
        assert!(t.contains(11) && t.contains(3) && !t.contains(19));
        assert_eq!(t.insert(3), Insert::Present);
    }

    #[test]
    fn a_full_table_says_so() {
        let t = table(4);
        for k in 1..=4 {
            assert_eq!(t.insert(k), Insert::New);
        }
        assert_eq!(t.insert(99), Insert::Full);
        assert!(!t.contains(99));
    }

    #[test]
    fn levels_grow_when_the_newest_is_half_full_and_remember_every_key() {
        let levels = Levels::new();
        levels.install(8, |n| Some(slots(n)));
        // 8 + 16 + 32 + 64 slots, each grown from once past half full: 5 + 9 + 17 keys fill the
        // first three levels, the rest go into the last.
        for k in 1..=90u64 {
            assert!(levels.first_sighting(k, 8, |n| Some(slots(n))), "{k}");
        }
        assert_eq!(levels.newest.load(Ordering::Relaxed), 3);
        for k in 1..=90u64 {
            assert!(
                !levels.first_sighting(k, 8, |n| Some(slots(n))),
                "{k} again"
            );
        }
        // The last level takes what it can; beyond it, every stack is sent whole.
        let sent_again = (1000..1100u64)
            .filter(|&k| levels.first_sighting(k, 8, |n| Some(slots(n))))
            .filter(|&k| levels.first_sighting(k, 8, |n| Some(slots(n))))
            .count();
        assert!(sent_again > 0);
    }

    #[test]
    fn without_a_first_level_every_stack_is_sent() {
        let levels = Levels::new();
        levels.install(8, |_| None);
        assert!(levels.first_sighting(5, 8, |n| Some(slots(n))));
        assert!(levels.first_sighting(5, 8, |n| Some(slots(n))));
    }
}
