//! Memory for the seen-stacks table: one anonymous mapping, touched only where slots are used.
//!
//! # Safety
//! The mapping is private, zero-filled, never unmapped, and its length is a whole number of
//! `AtomicU64`s, so viewing it as a `'static` slice of atomics is sound.
#![allow(unsafe_code)]

use std::sync::atomic::AtomicU64;

use crate::record::stacks::SeenTable;

const SLOTS: usize = 1 << 20;

/// Maps the table (8 MiB of address space, pages faulted in on use), or `None` if mapping fails.
pub fn allocate() -> Option<SeenTable> {
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
