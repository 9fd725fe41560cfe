//! The shim's own Rust allocations come from its own heap (`own_heap`), never from the traced
//! allocator: they are never traced, can never recurse, and cost the program no allocator arena.
//!
//! # Safety
//! `own_heap::alloc` returns blocks aligned as asked (or null); every block is released with
//! `own_heap::free`, or, when the heap's lock was held by this very thread (a re-entry from a signal
//! handler) and the real allocator served it, with the real `free`: each block goes back to the
//! allocator `own_heap::owns` says it came from.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use crate::sys::{own_heap, real};

/// The allocator of the shim's own code.
pub struct ShimAllocator;

fn release(p: *mut c_void) {
    if own_heap::owns(p) {
        own_heap::free(p)
    } else {
        real::free(p)
    }
}

// SAFETY: see the module note.
unsafe impl GlobalAlloc for ShimAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        own_heap::alloc(layout.size(), layout.align()) as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        release(ptr as *mut c_void)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = ptr as *mut c_void;
        if layout.align() <= 16 && own_heap::owns(p) {
            return own_heap::realloc(p, new_size) as *mut u8;
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a fresh block of the new layout; the old one holds at least min(old, new) bytes.
        unsafe {
            let q = self.alloc(new_layout);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            q
        }
    }
}
