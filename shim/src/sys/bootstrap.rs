//! A static arena for the few allocations `dlsym` makes while the real allocator is being looked up.
//!
//! # Safety
//! The arena is a zero-initialised static byte array handed out by an atomic bump pointer, so every
//! block is disjoint and stays valid for the life of the process. Blocks are never reused, which is
//! why `free` of one is a no-op and why a fresh block is already zeroed for `calloc`.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

const ARENA_SIZE: usize = 256 * 1024;
const HEADER: usize = 16;

#[repr(C, align(64))]
struct Arena(UnsafeCell<[u8; ARENA_SIZE]>);

// SAFETY: blocks are disjoint ranges handed out atomically; no two threads ever touch the same byte
// through the arena itself.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; ARENA_SIZE]));
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn base() -> usize {
    ARENA.0.get() as usize
}

/// True when `p` points into the arena.
#[inline]
pub fn owns(p: *mut c_void) -> bool {
    let a = p as usize;
    a >= base() && a < base() + ARENA_SIZE
}

/// A zeroed block of `size` bytes aligned to `align`, or null when the arena is exhausted.
pub fn alloc(size: usize, align: usize) -> *mut c_void {
    let align = align.clamp(16, 4096);
    loop {
        let cur = NEXT.load(Ordering::Relaxed);
        let start = (base() + cur + HEADER).next_multiple_of(align) - base();
        let end = match start.checked_add(size) {
            Some(e) if e <= ARENA_SIZE => e,
            _ => return std::ptr::null_mut(),
        };
        if NEXT
            .compare_exchange(cur, end, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            let block = (base() + start) as *mut u8;
            // SAFETY: [start - HEADER, end) lies inside the arena and belongs to this block alone;
            // the size is kept in front of the block for `move_out`.
            unsafe { (block.sub(HEADER) as *mut usize).write_unaligned(size) };
            return block as *mut c_void;
        }
    }
}

/// Moves an arena block into a block from `malloc` (realloc of a bootstrap pointer).
pub fn move_out(p: *mut c_void, size: usize, malloc: fn(usize) -> *mut c_void) -> *mut c_void {
    // SAFETY: `p` is an arena block, so its size sits in the HEADER bytes in front of it.
    let old = unsafe { ((p as *mut u8).sub(HEADER) as *const usize).read_unaligned() };
    let q = malloc(size);
    if !q.is_null() {
        // SAFETY: both blocks are at least min(old, size) bytes long and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(size)) };
    }
    q
}
