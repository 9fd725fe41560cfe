//! Where the shim's own Rust allocations come from. Never from the traced allocator's hooks: they
//! are never traced and can never recurse.
//!
//! - On the shim's own threads (writer, sampler), and for any block of 16 KiB or more: the shim's
//!   own heap (`own_heap`). A helper thread that called glibc's `malloc` would get an arena of its
//!   own (64 MiB of address space each), and a large block freed into glibc raises its dynamic mmap
//!   threshold: the program's next 1 MiB blocks then came from the heap instead of their own
//!   mappings, a different program.
//! - Small blocks on the program's threads (a hook's message for a new stack, say): the real
//!   allocator, in the arena and per-thread cache the thread already has. The shim's heap has one
//!   lock for all threads; 300 Python threads queued on it, and the program's exit took that much
//!   longer. Should the real allocator refuse, the shim's heap (with its reserve) serves. Such
//!   blocks freed on a shim thread are handed back to a program thread (`handed_back`).
//!
//! # Safety
//! `own_heap::alloc` and the real `malloc` return blocks aligned as asked (or null; `malloc` is
//! used only for alignments of 16 or less, which it always meets); every block is released with
//! `own_heap::free` or the real `free`, whichever allocator `own_heap::owns` says it came from.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use crate::record::guard;
use crate::sys::{handed_back, own_heap, real};

/// The largest block a program thread takes from the real allocator (below glibc's smallest mmap
/// threshold, far below the 128 KiB at which a free moves it).
const REAL_MAX: usize = 16 << 10;
const MALLOC_ALIGN: usize = 16;

/// The allocator of the shim's own code.
pub struct ShimAllocator;

fn from_real(size: usize, align: usize) -> bool {
    size <= REAL_MAX && align <= MALLOC_ALIGN && !guard::helper_thread()
}

fn release(p: *mut c_void) {
    if own_heap::owns(p) {
        own_heap::free(p)
    } else {
        handed_back::free(p)
    }
}

// SAFETY: see the module note.
unsafe impl GlobalAlloc for ShimAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if from_real(layout.size(), layout.align()) {
            handed_back::collect();
            let p = real::malloc(layout.size());
            if !p.is_null() {
                return p as *mut u8;
            }
        }
        own_heap::alloc(layout.size(), layout.align()) as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        release(ptr as *mut c_void)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = ptr as *mut c_void;
        if layout.align() <= MALLOC_ALIGN {
            if own_heap::owns(p) {
                return own_heap::realloc(p, new_size) as *mut u8;
            }
            if from_real(new_size, layout.align()) {
                let q = real::realloc(p, new_size);
                if !q.is_null() {
                    return q as *mut u8;
                }
            }
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
