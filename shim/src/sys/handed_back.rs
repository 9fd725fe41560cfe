//! Blocks of the real allocator that one of the shim's own threads let go of: they are not freed
//! there but handed back, and a program thread frees them the next time the shim allocates on it.
//!
//! Why: a thread's first `free` in glibc 2.39 sets up its per-thread cache, and that makes the
//! thread an arena (64 MiB of address space). The writer frees the messages program threads
//! allocated; freeing them itself cost a program that lives under `RLIMIT_AS` 65 of its 512 MiB.
//!
//! Never: allocate or take a lock (the list is linked through the dead blocks' first word: every
//! glibc block holds at least 24 bytes), or free on a shim thread.
//!
//! # Safety
//! Only blocks of the real allocator that nobody uses any more are pushed, each once; the list's
//! head is taken whole with one swap, so no thread ever reads a block another may be freeing.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::record::guard;
use crate::sys::real;

static HEAD: AtomicUsize = AtomicUsize::new(0);

/// Frees `p`, a block of the real allocator: at once on a program thread, later on a shim thread.
pub fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    if !guard::helper_thread() {
        return real::free(p);
    }
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        // SAFETY: `p` is a dead block of at least a word, ours until it is on the list.
        unsafe { (p as *mut usize).write(head) };
        match HEAD.compare_exchange_weak(head, p as usize, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

/// On a program thread: frees what the shim's threads handed back.
#[inline]
pub fn collect() {
    if HEAD.load(Ordering::Relaxed) == 0 || guard::helper_thread() {
        return;
    }
    let mut p = HEAD.swap(0, Ordering::AcqRel);
    while p != 0 {
        // SAFETY: a block on the list holds the next one's address in its first word.
        let next = unsafe { *(p as *const usize) };
        real::free(p as *mut c_void);
        p = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_handed_back_by_a_shim_thread_are_freed_on_a_program_thread() {
        // No other test of this binary uses the guard's keys.
        assert!(guard::init(false), "no thread-specific keys left");
        let blocks: Vec<usize> = (0..100).map(|i| real::malloc(8 + i) as usize).collect();
        let helper = std::thread::spawn(move || {
            guard::mark_thread_untraced();
            assert!(guard::helper_thread());
            for &b in &blocks {
                free(b as *mut c_void);
            }
            // Still handed back: a shim thread never frees into the real allocator.
            collect();
            HEAD.load(Ordering::Acquire)
        });
        let head = helper.join().unwrap();
        assert_ne!(head, 0, "handed back, not freed");
        assert!(!guard::helper_thread());
        collect();
        assert_eq!(HEAD.load(Ordering::Acquire), 0);
    }
}
