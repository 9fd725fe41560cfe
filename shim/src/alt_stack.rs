//! Alternate signal stacks for the crash handler (see `crash`): without one, the handler cannot run
//! when a thread overflows its stack, and the trace ends without its last moments. The main thread
//! gets one at start; every other program thread when the shim first captures a stack on it (the
//! moment it reads the thread's stack bounds), and gives it back at the thread's exit. A thread
//! that already has one (the program's own) keeps it; a program that sets its own later replaces
//! ours, and a query answers "none" while the one in place is the shim's (the `sigaltstack` hook).
//!
//! Never: replace the program's alternate stack, unmap a stack the kernel may still run a handler
//! on, or allocate (the per-thread record is a thread-specific value, the stack a raw mapping).
//!
//! # Safety
//! Each stack is a fresh private anonymous mapping of `SIZE` bytes, made with the real `mmap` (not
//! the program's mapping), handed to the kernel for the calling thread only. A thread's stack is
//! unmapped only by its key's destructor, at that thread's exit, after the kernel was told to stop
//! using it (when it was still the one in place). The main thread's is never unmapped.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

const SIZE: usize = 64 << 10;
/// The main thread's: room for ending the trace in the handler itself, which a process with no
/// helper thread yet does there (see `on_demand`). Reserved, not touched: it costs address space.
const MAIN_SIZE: usize = 256 << 10;
const NO_KEY: u32 = u32::MAX;

/// The base of the main thread's alternate stack set by the shim, 0 when none.
static MAIN: AtomicUsize = AtomicUsize::new(0);
/// Holds each other thread's stack base; its destructor gives the stack back.
static KEY: AtomicU32 = AtomicU32::new(NO_KEY);

/// Maps a stack and makes it the calling thread's alternate stack, if it has none; its base.
fn set_one(size: usize) -> Option<usize> {
    // SAFETY: a query with a null new stack; then a fresh mapping handed to the kernel for this
    // thread (see the module note).
    unsafe {
        let mut old: libc::stack_t = std::mem::zeroed();
        if crate::sys::real::sigaltstack(std::ptr::null(), &mut old) != 0
            || old.ss_flags & libc::SS_DISABLE == 0
        {
            return None;
        }
        let p = crate::sys::real::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        let ss = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: size,
        };
        if crate::sys::real::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
            crate::sys::real::munmap(p, size);
            return None;
        }
        Some(p as usize)
    }
}

/// At start, on the main thread: its alternate stack, and the key for the other threads'.
pub fn init_main() {
    if let Some(base) = set_one(MAIN_SIZE) {
        MAIN.store(base, Ordering::Release);
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a valid out-pointer and a destructor that takes the value it was given.
    if unsafe { libc::pthread_key_create(&mut key, Some(give_back)) } == 0 {
        KEY.store(key, Ordering::Release);
    }
}

/// On a program thread other than main, the first time the shim captures a stack there.
pub fn init_thread() {
    let key = KEY.load(Ordering::Acquire);
    if key == NO_KEY {
        return;
    }
    if let Some(base) = set_one(SIZE) {
        // SAFETY: `key` was created by `init_main` and is never deleted.
        unsafe { libc::pthread_setspecific(key, base as *const libc::c_void) };
    }
}

/// The key's destructor, at the thread's exit: stops the kernel using our stack (when it is still
/// the one in place) and unmaps it.
extern "C" fn give_back(base: *mut libc::c_void) {
    // SAFETY: `base` is the mapping `init_thread` made for this thread; once it is no longer this
    // thread's alternate stack, no handler can run on it.
    unsafe {
        let mut now: libc::stack_t = std::mem::zeroed();
        if crate::sys::real::sigaltstack(std::ptr::null(), &mut now) != 0 {
            return;
        }
        if now.ss_sp == base {
            if now.ss_flags & libc::SS_ONSTACK != 0 {
                return;
            }
            let off = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            if crate::sys::real::sigaltstack(&off, std::ptr::null_mut()) != 0 {
                return;
            }
        }
        crate::sys::real::munmap(base, SIZE);
    }
}

/// Bytes of stack left below the caller when it runs on an alternate signal stack (in a signal's
/// handler); `None` when it does not.
pub fn room_here() -> Option<usize> {
    // SAFETY: a query only, with a null new stack and a valid out-pointer.
    let now = unsafe {
        let mut now: libc::stack_t = std::mem::zeroed();
        if crate::sys::real::sigaltstack(std::ptr::null(), &mut now) != 0 {
            return None;
        }
        now
    };
    let here = &now as *const libc::stack_t as usize;
    let base = now.ss_sp as usize;
    (now.ss_flags & libc::SS_ONSTACK != 0 && here >= base && here < base + now.ss_size)
        .then(|| here - base)
}

/// Whether `sp`, the alternate stack in place on the calling thread, is one the shim set.
pub fn is_ours(sp: *mut libc::c_void) -> bool {
    if sp.is_null() {
        return false;
    }
    if sp as usize == MAIN.load(Ordering::Acquire) {
        return true;
    }
    let key = KEY.load(Ordering::Acquire);
    // SAFETY: `key` was created by `init_main` and is never deleted.
    key != NO_KEY && unsafe { libc::pthread_getspecific(key) } == sp
}
