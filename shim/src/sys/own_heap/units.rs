//! The address ranges of the shim's own heap: mappings made with raw system calls, each starting on
//! a 64 KiB boundary, and a table of those starts so that `free` can tell in a few instructions
//! whether a pointer is the shim's (the unit start of a pointer is the pointer rounded down to 64 KiB,
//! and every block lies in the first unit of its mapping).
//!
//! Never: call `mmap` through the loader's symbol (the shim's own hook) or allocate. The table is
//! written only under the heap's lock; `owns` reads it with no lock from any thread.
//!
//! # Safety
//! `mmap`/`munmap` are made as raw system calls (`sys::raw_syscall`, never a hooked entry point) on ranges this module mapped itself; a range is
//! taken out of the table before it is unmapped, so no pointer into it is ever called the shim's
//! after the kernel may have handed the addresses to someone else.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

/// The alignment of every mapping (and the size of a page of small blocks).
pub const UNIT: usize = 64 << 10;
const SMALL_PAGE: usize = 4096;
/// Table slots: at most 3/4 are filled, so 6144 mappings (384 MiB of small-block pages).
const SLOTS: usize = 8192;
const MAX_FILLED: usize = SLOTS / 4 * 3;
const EMPTY: usize = 0;
/// A slot whose mapping was unmapped: lookups go on past it.
const GONE: usize = 1;

#[allow(clippy::declare_interior_mutable_const)]
const FREE_SLOT: AtomicUsize = AtomicUsize::new(EMPTY);
static TABLE: [AtomicUsize; SLOTS] = [FREE_SLOT; SLOTS];
static FILLED: AtomicUsize = AtomicUsize::new(0);
/// The lowest and highest unit start in the table, a quick refusal for most foreign pointers.
static LOW: AtomicUsize = AtomicUsize::new(usize::MAX);
static HIGH: AtomicUsize = AtomicUsize::new(0);

#[inline(always)]
fn slot_of(unit: usize) -> usize {
    ((unit >> 16).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 13)) & (SLOTS - 1)
}

/// True when `p` points into one of the shim's mappings.
#[inline(always)]
pub fn owns(p: usize) -> bool {
    let unit = p & !(UNIT - 1);
    if unit < LOW.load(Ordering::Relaxed) || unit > HIGH.load(Ordering::Relaxed) {
        return false;
    }
    let mut i = slot_of(unit);
    for _ in 0..SLOTS {
        match TABLE[i].load(Ordering::Acquire) {
            EMPTY => return false,
            v if v == unit => return true,
            _ => i = (i + 1) & (SLOTS - 1),
        }
    }
    false
}

/// Maps `len` bytes (rounded up to whole pages, and to one unit at least) starting on a unit
/// boundary and records the start; `None` when the kernel refuses or the table is full. Caller
/// holds the heap's lock. At least a unit: `owns` takes every pointer in the first unit for the
/// shim's, so no one else's mapping may share it (a 20 KiB mapping once left the rest of its unit
/// to a program's block, whose free then unmapped the shim's).
pub fn map(len: usize) -> Option<(usize, usize)> {
    let len = len.max(UNIT).checked_next_multiple_of(SMALL_PAGE)?;
    if FILLED.load(Ordering::Relaxed) >= MAX_FILLED {
        return None;
    }
    let base = map_aligned(len)?;
    insert(base);
    Some((base, len))
}

/// Unmaps a range made by [`map`], after taking it out of the table. Caller holds the heap's lock.
pub fn unmap(base: usize, len: usize) {
    remove(base);
    // SAFETY: the range was mapped by `map` and nothing of the shim's refers to it any more.
    unsafe { crate::sys::raw_syscall(libc::SYS_munmap, [base, len, 0, 0, 0, 0]) };
}

/// Records `unit`, the start of a piece of an existing mapping (the reserve), as a mapping's start.
/// Caller holds the heap's lock.
pub fn adopt(unit: usize) {
    debug_assert_eq!(unit % UNIT, 0);
    if !owns(unit) {
        insert(unit);
    }
}

fn raw_mmap(len: usize) -> Option<usize> {
    let prot = (libc::PROT_READ | libc::PROT_WRITE) as usize;
    let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as usize;
    // SAFETY: an anonymous private mapping at an address of the kernel's choice.
    let p =
        unsafe { crate::sys::raw_syscall(libc::SYS_mmap, [0, len, prot, flags, usize::MAX, 0]) };
    // The kernel returns -errno (-4095..-1) on failure; user addresses are below 2^47.
    (p > 0).then_some(p as usize)
}

/// A mapping of `len` bytes at a unit boundary: mapped first as it is (the kernel often places it
/// aligned next to the previous one), else with a unit more and the ends trimmed.
fn map_aligned(len: usize) -> Option<usize> {
    let p = raw_mmap(len)?;
    if p % UNIT == 0 {
        return Some(p);
    }
    // SAFETY: `p` is the mapping just made, of `len` bytes.
    unsafe { crate::sys::raw_syscall(libc::SYS_munmap, [p, len, 0, 0, 0, 0]) };
    let wide = len.checked_add(UNIT)?;
    let p = raw_mmap(wide)?;
    let base = p.next_multiple_of(UNIT);
    let end = base + len;
    // SAFETY: both trimmed pieces lie inside the mapping just made and outside [base, end).
    unsafe {
        if base > p {
            crate::sys::raw_syscall(libc::SYS_munmap, [p, base - p, 0, 0, 0, 0]);
        }
        if p + wide > end {
            crate::sys::raw_syscall(libc::SYS_munmap, [end, p + wide - end, 0, 0, 0, 0]);
        }
    }
    Some(base)
}

fn insert(unit: usize) {
    let mut i = slot_of(unit);
    loop {
        let v = TABLE[i].load(Ordering::Relaxed);
        if v == EMPTY || v == GONE {
            break;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    if TABLE[i].load(Ordering::Relaxed) == EMPTY {
        FILLED.fetch_add(1, Ordering::Relaxed);
    }
    TABLE[i].store(unit, Ordering::Release);
    LOW.fetch_min(unit, Ordering::Relaxed);
    HIGH.fetch_max(unit, Ordering::Relaxed);
}

fn remove(unit: usize) {
    let mut i = slot_of(unit);
    for _ in 0..SLOTS {
        match TABLE[i].load(Ordering::Relaxed) {
            EMPTY => return,
            v if v == unit => {
                TABLE[i].store(GONE, Ordering::Release);
                return;
            }
            _ => i = (i + 1) & (SLOTS - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_is_owned_until_unmapped_and_foreign_pointers_never_are() {
        let (base, len) = map(3 * UNIT + 5).expect("a mapping");
        assert_eq!(base % UNIT, 0);
        assert_eq!(len, 3 * UNIT + SMALL_PAGE);
        let (small, small_len) = map(100).expect("a mapping");
        assert_eq!(small_len, UNIT, "a mapping fills its first unit");
        unmap(small, small_len);
        assert!(owns(base) && owns(base + 100) && owns(base + UNIT - 1));
        let on_stack = 0u8;
        assert!(!owns(&on_stack as *const u8 as usize));
        let boxed = Box::new(0u64);
        assert!(!owns(&*boxed as *const u64 as usize));
        unmap(base, len);
        assert!(!owns(base + 100));
    }
}
