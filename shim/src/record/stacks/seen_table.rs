//! The seen-stacks table: the stack hashes already sent to the writer, so that each distinct stack's
//! frames travel once. An open-addressing, insert-only, lock-free set in one anonymous mapping,
//! touched only where slots are used.
//!
//! # Safety
//! The mapping is private, zero-filled, never unmapped, and its length is a whole number of
//! `AtomicU64`s, so viewing it as a `'static` slice of atomics is sound.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

const SLOTS: usize = 1 << 20;

/// The process's table, set once at start (a fork child keeps its parent's: see `stacks::new_epoch`).
static SEEN: OnceLock<SeenTable> = OnceLock::new();

/// Maps the process's table; without it every stack is sent whole.
pub fn install() {
    if let Some(table) = allocate() {
        let _ = SEEN.set(table);
    }
}

/// True when `hash` is a stack the writer has not been sent yet.
#[inline]
pub fn first_sighting(hash: u64) -> bool {
    SEEN.get().is_none_or(|t| t.first_sighting(hash))
}

/// Maps the table (8 MiB of address space, pages faulted in on use), or `None` if mapping fails.
fn allocate() -> Option<SeenTable> {
    let bytes = SLOTS * std::mem::size_of::<AtomicU64>();
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
    // SAFETY: see the module note: a fresh, zeroed, never-unmapped mapping of SLOTS u64s.
    let slots = unsafe { std::slice::from_raw_parts(p as *const AtomicU64, SLOTS) };
    Some(SeenTable::new(slots))
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

    /// True when `key` was not in the table before (the caller must send the frames); also true when
    /// the table is too full to tell.
    #[inline]
    pub fn first_sighting(&self, key: u64) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (key as usize) & mask;
        for _ in 0..MAX_PROBES {
            let slot = &self.slots[i];
            let v = slot.load(Ordering::Acquire);
            if v == key {
                return false;
            }
            if v == 0 {
                match slot.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return true,
                    Err(found) if found == key => return false,
                    Err(_) => {}
                }
            }
            i = (i + 1) & mask;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: usize) -> SeenTable {
        let v: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        SeenTable::new(Box::leak(v.into_boxed_slice()))
    }

    #[test]
    fn first_sighting_once_per_key_even_when_colliding_slots() {
        let t = table(8);
        assert!(t.first_sighting(3));
        assert!(!t.first_sighting(3));
        assert!(t.first_sighting(11)); // same slot as 3, probes on
        assert!(!t.first_sighting(11));
        assert!(!t.first_sighting(3));
    }

    #[test]
    fn full_table_asks_to_send() {
        let t = table(4);
        for k in 1..=4 {
            assert!(t.first_sighting(k));
        }
        assert!(t.first_sighting(99));
        assert!(t.first_sighting(99));
    }
}
