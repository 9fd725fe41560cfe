//! The shim's per-thread words, reached from the thread pointer at one fixed offset: the hot path's
//! per-thread state (the guard, the counting slot, the sampling countdown) at the cost of two
//! loads, where `pthread_getspecific` is a call through the PLT per word and a hook asked four.
//!
//! The words are an ordinary Rust thread-local. Its address on a thread is found once, at start,
//! and kept as its distance from that thread's pointer (`%fs:0` on x86-64, `tpidr_el0` on
//! AArch64). That distance is the same on every thread only when the library's TLS block is part of
//! the static TLS area that glibc lays out for the libraries loaded at start-up, which a preloaded
//! library's always is: so [`init`] is called only for a preloaded shim. This is what the
//! initial-exec TLS model does, with the offset read at run time instead of written by a relocation,
//! so the library is not marked as needing static TLS and `memshim attach` can still `dlopen` it.
//!
//! Never: reach the words through `__tls_get_addr` on the hot path. It may grow the thread's DTV
//! with `malloc` after a `dlopen` that brought new TLS, which recursed into the hooks before the
//! guard could say "inside the shim" (seen with PyTorch loading libnvshmem); see `guard`.
//!
//! # Safety
//! The offset is set once, before any hook uses it, from the address of the thread-local's words on
//! the calling thread and that thread's pointer, and only when the difference is inside the static
//! TLS area's bounds (under 64 KiB on the side glibc puts it). Reads and writes through it touch only
//! the calling thread's own words, which exist from the thread's creation to its end (static TLS is
//! part of the thread's descriptor allocation), so they are plain, unsynchronised accesses, safe in a
//! signal handler as well.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The guard's state (`record::guard`).
pub const GUARD: usize = 0;
/// The cached kernel thread id.
pub const TID: usize = 1;
/// The low end of the thread's stack, once read.
pub const STACK_LOW: usize = 2;
/// The thin mode's counting slot (`sampling::thin_totals`).
pub const THIN_SLOT: usize = 3;
/// The every-event sampling mode's countdown (`sampling::take`).
pub const COUNTDOWN: usize = 4;
const COUNT: usize = 5;

thread_local! {
    /// Const-initialised plain cells: no destructor is registered and nothing is allocated but the
    /// TLS block itself.
    static WORDS: [Cell<usize>; COUNT] = const { [const { Cell::new(0) }; COUNT] };
}

/// The words' distance from the thread pointer; 0 until [`init`] found it.
static OFFSET: AtomicIsize = AtomicIsize::new(0);

/// The furthest a static TLS block lies from the thread pointer. glibc's static area is the size of
/// the start-up libraries' TLS plus a surplus of under 2 KiB; this leaves room for large ones.
const STATIC_TLS_SPAN: isize = 1 << 16;

/// Finds the words' offset on the calling thread. Call it only in a preloaded shim (see the module
/// note); returns false, leaving the fast words off, when the offset is not one a static TLS block
/// can have.
pub fn init() -> bool {
    if OFFSET.load(Ordering::Acquire) != 0 {
        return true;
    }
    let Some(tp) = thread_pointer() else {
        return false;
    };
    let words = WORDS.with(|w| w.as_ptr() as usize);
    let off = words.wrapping_sub(tp) as isize;
    if !static_side(off) {
        return false;
    }
    OFFSET.store(off, Ordering::Release);
    true
}

/// Whether `off` is where glibc puts a static TLS block: below the thread pointer on x86-64 (TLS
/// variant II), above it on AArch64 (variant I, after the 16-byte thread control block).
fn static_side(off: isize) -> bool {
    if cfg!(target_arch = "x86_64") {
        (-STATIC_TLS_SPAN..0).contains(&off)
    } else {
        (16..STATIC_TLS_SPAN).contains(&off)
    }
}

/// True once [`init`] found the offset: [`get`] and [`set`] may then be used on any thread.
#[inline(always)]
pub fn fast() -> bool {
    OFFSET.load(Ordering::Relaxed) != 0
}

/// The calling thread's word `i`. Only after [`fast`] said true.
#[inline(always)]
pub fn get(i: usize) -> usize {
    word(i).get()
}

/// Sets the calling thread's word `i`. Only after [`fast`] said true.
#[inline(always)]
pub fn set(i: usize, v: usize) {
    word(i).set(v)
}

#[inline(always)]
fn word(i: usize) -> &'static Cell<usize> {
    let off = OFFSET.load(Ordering::Relaxed);
    debug_assert!(off != 0 && i < COUNT);
    let tp = thread_pointer().unwrap_or(0);
    // SAFETY: `off` is the distance from the thread pointer to this thread's words, the same on
    // every thread (see the module note); the cell is the calling thread's own, used only by it.
    // The reference does not outlive the thread: callers use it within the call.
    unsafe { &*((tp as isize + off) as *const Cell<usize>).add(i) }
}

/// The calling thread's word `i` where [`fast`], else the value of the thread-specific `key` (which
/// must be one of the first 32, stored without allocating): for state that a shim without the fast
/// words keeps in a key.
#[inline(always)]
pub fn get_or_key(i: usize, key: libc::pthread_key_t) -> usize {
    if fast() {
        return get(i);
    }
    // SAFETY: `key` is a live key; its value is an integer, never dereferenced.
    unsafe { libc::pthread_getspecific(key) as usize }
}

/// As [`get_or_key`], a write.
#[inline(always)]
pub fn set_or_key(i: usize, key: libc::pthread_key_t, v: usize) {
    if fast() {
        return set(i, v);
    }
    // SAFETY: as in `get_or_key`; for keys below 32 glibc stores the value without allocating.
    unsafe { libc::pthread_setspecific(key, v as *const libc::c_void) };
}

/// The words of the calling thread reached through the thread-local itself: for a shim that was
/// not preloaded (the first use on a thread may allocate its block, so never in a signal handler).
pub fn get_slow(i: usize) -> usize {
    WORDS.with(|w| w[i].get())
}

/// As [`get_slow`], a write.
pub fn set_slow(i: usize, v: usize) {
    WORDS.with(|w| w[i].set(v))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn thread_pointer() -> Option<usize> {
    let tp: usize;
    // SAFETY: on x86-64 Linux, `%fs:0` holds the thread pointer itself (the TCB's self-pointer,
    // which glibc sets for every thread it makes); a plain load that touches nothing else.
    unsafe {
        std::arch::asm!(
            "mov {tp}, qword ptr fs:[0]",
            tp = out(reg) tp,
            options(nostack, preserves_flags, readonly, pure)
        );
    }
    Some(tp)
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn thread_pointer() -> Option<usize> {
    let tp: usize;
    // SAFETY: reading `tpidr_el0`, the thread pointer register, touches no memory.
    unsafe {
        std::arch::asm!(
            "mrs {tp}, tpidr_el0",
            tp = out(reg) tp,
            options(nostack, preserves_flags, nomem, pure)
        );
    }
    Some(tp)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn thread_pointer() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_reaches_its_own_words_at_the_one_offset() {
        assert!(init(), "the test binary's TLS is static");
        set(COUNTDOWN, 7);
        let theirs = std::thread::spawn(|| {
            let before = get(COUNTDOWN);
            set(COUNTDOWN, 9);
            (before, get(COUNTDOWN), get_slow(COUNTDOWN))
        })
        .join()
        .expect("worker");
        assert_eq!(theirs, (0, 9, 9));
        assert_eq!(get(COUNTDOWN), 7);
        assert_eq!(get_slow(COUNTDOWN), 7);
    }
}
