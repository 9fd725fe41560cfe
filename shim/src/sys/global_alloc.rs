//! The shim's own Rust allocations go straight to the real allocator, never through its hooks, so
//! they are never traced and can never recurse.
//!
//! # Safety
//! `malloc` returns blocks aligned to at least 16 bytes (and to the size for smaller sizes), so it
//! serves any layout with `align <= 16 && align <= size`; larger alignments use `memalign`. Every
//! block is released with the real `free` of the same allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use crate::sys::real;

/// The allocator of the shim's own code.
pub struct RealAllocator;

const MALLOC_ALIGN: usize = 16;

fn plain(layout: &Layout) -> bool {
    layout.align() <= MALLOC_ALIGN && layout.align() <= layout.size()
}

// SAFETY: see the module note.
unsafe impl GlobalAlloc for RealAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            real::malloc(layout.size()) as *mut u8
        } else {
            real::memalign(layout.align(), layout.size()) as *mut u8
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            real::calloc(1, layout.size()) as *mut u8
        } else {
            let p = real::memalign(layout.align(), layout.size()) as *mut u8;
            if !p.is_null() {
                // SAFETY: `p` is a fresh block of layout.size() bytes.
                unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            }
            p
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        real::free(ptr as *mut c_void)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align(new_size, layout.align());
        if plain(&layout) && new_layout.as_ref().is_ok_and(plain) {
            return real::realloc(ptr as *mut c_void, new_size) as *mut u8;
        }
        let Ok(new_layout) = new_layout else {
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
