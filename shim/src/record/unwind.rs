//! The fast unwinder: libunwind's `unw_backtrace`, which caches what it learns about each return
//! address, where libgcc's `_Unwind_Backtrace` interprets DWARF again for every frame of every stack
//! (about ten times slower on deep stacks; heaptrack relies on the same libunwind path). libunwind is
//! loaded at start only if the system has it (`RTLD_LOCAL`, so its own `_Unwind_Backtrace` and
//! `backtrace` never interpose on the program's); otherwise, or with `MEMSHIM_UNWIND=gcc`, stacks come
//! from libgcc as before.
//!
//! libunwind keeps a pipe open for the whole run, through which it tests addresses before reading
//! them. The shim opens it at start, high in the descriptor table, and once the program closes it
//! (a daemon closing every descriptor) libunwind is never called again: it would read from, write
//! to and close numbers that may be the program's files by then.
//!
//! # Safety
//! `UNW_BACKTRACE` only ever holds the address of libunwind's `unw_backtrace(void **, int) -> int`,
//! found by dlsym in a library that is never unloaded; it writes at most `size` pointers to `buffer`.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sys::owned_fds::{self, Owner};
use crate::sys::real;

static UNW_BACKTRACE: AtomicUsize = AtomicUsize::new(0);

/// Loads libunwind if the system has it and `mode` allows; returns whether the fast path is on.
pub fn init(mode: &str) -> bool {
    if mode == "gcc" {
        return false;
    }
    // RTLD_LOCAL keeps its symbols out of the global scope.
    let h = real::dlopen(c"libunwind.so.8", libc::RTLD_NOW | libc::RTLD_LOCAL);
    if h.is_null() {
        return false;
    }
    let f = real::dlsym(h, c"unw_backtrace");
    if f.is_null() || crate::sys::nofile_limit().is_some_and(|n| n < MIN_NOFILE) {
        return false;
    }
    UNW_BACKTRACE.store(f as usize, Ordering::Release);
    // libunwind opens a pipe at its first use (to test addresses before it reads them): open it
    // now, while the low descriptors are taken, so it lands high, and note its two ends.
    let ((), pipe) = crate::sys::with_low_descriptors_taken(|| {
        let mut buf = [0u64; 4];
        backtrace(&mut buf);
    });
    for fd in [pipe, pipe + 1] {
        if crate::sys::is_pipe(fd) && !owned_fds::claim(fd, Owner::Unwinder) {
            UNW_BACKTRACE.store(0, Ordering::Release);
            return false;
        }
    }
    true
}

/// Below this soft `RLIMIT_NOFILE` libunwind is not used: its pipe would take two of the few
/// descriptors the program has.
const MIN_NOFILE: u64 = 64;

/// Has libunwind set up the calling thread's state (its thread-local block, which glibc allocates at
/// the first access and frees with the thread): one frame's unwind. For `guard::with_own_heap`.
pub fn touch_thread_state() {
    // Its first use reads its pipe, a cancellation point, as every capture does (see `stacks`).
    crate::sys::without_cancellation(|| {
        let mut buf = [0u64; 1];
        let _ = backtrace(&mut buf);
    });
}

/// Fills `buf` with the calling thread's return addresses (the innermost is this function's caller's
/// own pc), or `None` when the fast unwinder is not loaded. The addresses are written as `u64`s, so
/// the caller's frame buffer takes them directly.
#[inline]
pub fn backtrace(buf: &mut [u64]) -> Option<usize> {
    let f = UNW_BACKTRACE.load(Ordering::Acquire);
    // Once the program has closed libunwind's pipe, its numbers may be the program's files.
    if f == 0 || !owned_fds::unwinder_intact() {
        return None;
    }
    const _: () = assert!(std::mem::size_of::<u64>() == std::mem::size_of::<*mut c_void>());
    // SAFETY: see the module note; `buf` holds `buf.len()` writable slots the size and alignment of a
    // pointer (checked above), and any bit pattern the unwinder writes is a valid u64.
    let n = unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int>(f)(
            buf.as_mut_ptr().cast::<*mut c_void>(),
            buf.len() as c_int,
        )
    };
    Some(n.max(0) as usize)
}

/// True once libunwind was loaded and then given up because the program released its pipe: stacks
/// come from libgcc's unwinder from then on, several times slower on deep stacks.
pub fn lost() -> bool {
    UNW_BACKTRACE.load(Ordering::Acquire) != 0 && !owned_fds::unwinder_intact()
}

/// libgcc's unwinder (`_Unwind_Backtrace`, through the `backtrace` crate): calls `frame` with each
/// return address, innermost first, while it returns true.
#[inline(always)]
pub fn gcc_frames(mut frame: impl FnMut(u64) -> bool) {
    // SAFETY: on Linux the unwinder (libgcc's _Unwind_Backtrace) is thread-safe; the
    // "unsynchronized" in the name only matters on platforms whose unwinders are not.
    unsafe { backtrace::trace_unsynchronized(|f| frame(f.ip() as u64)) }
}
