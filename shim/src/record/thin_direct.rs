//! The thin sampling mode's `malloc` and `free` without the guard, when glibc's allocator comes
//! next: the production mode's common case, where nearly every call is only counted.
//!
//! The guard exists so that what a hook causes (the stack capture's first touch of libunwind's
//! thread-locals, jemalloc's own `mmap`s, the channel's start) passes through untraced. Entering it
//! is a `pthread_getspecific` and a `pthread_setspecific`, and leaving it another store: two thirds
//! of what the guard costs, on every call, for the few calls that are sampled. Here a call that is
//! not inside the shim already goes to glibc's `malloc` or `free` unguarded, which is safe because
//! they reach no hook (their `mmap`, `munmap` and `sbrk` are the C library's internal calls) and
//! counting calls nothing at all; the guard is entered only to record a sampled call.
//!
//! Never: start the trace, claim a thread's counting slot or record anything without the guard. A
//! call that would need one of those (the trace not running yet, the thread's first count, a
//! sampled call) takes the guarded path, so its effects are the same as there.
use std::ffi::c_void;

use memshim_trace::AllocFn;

use super::{guard, recorder, sampling};
use crate::{channel, sys::real};

/// Whether this `malloc` or `free` may take the unguarded path: the thin mode, the trace running,
/// glibc's allocator next, and the thread not inside the shim (nor one of its own).
#[inline(always)]
pub fn usable_here() -> bool {
    sampling::thin() && channel::heap_running() && real::glibc_heap() && !guard::inside()
}

/// After glibc's `malloc` (or `calloc`) returned `p` for `size` bytes: counts it, and records it
/// when it is the sampled one.
#[inline(always)]
pub fn allocated(func: AllocFn, p: *mut c_void, size: usize) {
    if p.is_null() {
        return;
    }
    let usable = real::live_usable_size(p) as u64;
    if usable == 0 {
        return;
    }
    match sampling::thin_alloc_unguarded(p as u64, size as u64, usable) {
        Some(false) => {}
        Some(true) => {
            // Not inside the shim (checked by `usable_here`, and a signal handler that entered
            // since has left again), so the guard is ours.
            let _inside = guard::enter();
            recorder::record_thin_alloc(func, p, size, usable);
        }
        None => {
            if let Some(g) = guard::enter() {
                recorder::on_alloc(&g, func, p, size);
            }
        }
    }
}

/// Before glibc's `free` of `p`: counts it, and records it when its block was a sampled one (before
/// the real free, so that the address is not handed out again before the record).
#[inline(always)]
pub fn freeing(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    let usable = real::live_usable_size(p) as u64;
    if usable == 0 {
        return;
    }
    match sampling::thin_free_unguarded(p as u64, usable) {
        Some(false) => {}
        Some(true) => {
            let _inside = guard::enter();
            recorder::record_free(p, false);
        }
        None => {
            if let Some(g) = guard::enter() {
                recorder::on_free(&g, p, false);
            }
        }
    }
}
