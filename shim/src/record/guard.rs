//! Per-thread state of the shim: the reentrancy guard, the cached thread id, and where the thread's
//! stack ends (so the unwinder is never run with too little stack left).
//!
//! # Safety
//! Preloaded (`memshim run`), all three live in `sys::thread_words`: words reached from the thread
//! pointer at an offset found at start, two loads and no call. Not through `__tls_get_addr`, which
//! allocates with `malloc` when a `dlopen`ed library brings new TLS (it grows the thread's DTV): the
//! guard would recurse into `malloc` before it could say "inside the shim" (seen with PyTorch loading
//! libnvshmem). Where those words cannot be had (an architecture other than x86-64 and AArch64),
//! they live in `pthread_getspecific` slots: glibc keeps the first 32 keys' values inside the thread
//! descriptor, so `pthread_getspecific`/`setspecific` on them never allocate. Either is set up once,
//! at start, before any helper thread exists; until then the guard is inert (nothing is recorded
//! before start anyway).
//!
//! Attached (`memshim attach`), the library's TLS need not be in the static area, so the offset is
//! not used; and in a process that has used its first 32 keys already (PyTorch's have), a new key's
//! value lives in a block `pthread_setspecific` `calloc`s on each thread's first set, through the C
//! library's own import slot, which attaching redirects to the hooks: every thread's first hook
//! recursed until its stack overflowed. There the state is reached through the Rust thread-local
//! itself (`thread_words::get_slow`): the shim is not preloaded, so the loader's `malloc` for a
//! thread's TLS block is the C library's own, which no hook sees.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use crate::sys::thread_words as words;

const NO_KEY: u32 = u32::MAX;
/// Marks a "key" that names a thread word reached through the Rust thread-local itself
/// (`words::get_slow(key & 7)`), not a pthread key.
const TLS_KEY: u32 = 1 << 31;
/// Marks a "key" that names a thread word reached from the thread pointer (`words::get(key & 7)`).
const FAST_KEY: u32 = 1 << 30;
/// glibc's first-level key block: keys below it are stored without allocating.
const INLINE_KEYS: libc::pthread_key_t = 32;
static IN_SHIM: AtomicU32 = AtomicU32::new(NO_KEY);
static TID: AtomicU32 = AtomicU32::new(NO_KEY);
static STACK_LOW: AtomicU32 = AtomicU32::new(NO_KEY);
/// `STACK_LOW`'s value for a thread whose stack bounds cannot be read.
const UNKNOWN_STACK: usize = 1;
/// Marks "inside the shim" on a program thread.
const INSIDE: usize = 1;
/// Marks one of the shim's own threads: inside the shim for good.
const HELPER: usize = 2;
/// Marks "inside the shim" on a program thread that the CUDA driver called back (CUPTI): the
/// driver's own frames sit between the shim's and the program's.
const FROM_DRIVER: usize = 3;
/// Marks "inside the shim" on a program thread while C code the shim calls keeps what it allocates
/// beyond the call (see [`with_own_heap`]).
const OWN_HEAP: usize = 4;

/// Sets up the state's words, creating keys where they are needed; returns false when the process
/// has none left (the shim then records nothing). `late` (attached to a running process): keys that
/// would allocate are given back and the Rust thread-local used instead (see the module note).
pub fn init(late: bool) -> bool {
    if !late && words::init() {
        IN_SHIM.store(FAST_KEY | words::GUARD as u32, Ordering::Release);
        TID.store(FAST_KEY | words::TID as u32, Ordering::Release);
        STACK_LOW.store(FAST_KEY | words::STACK_LOW as u32, Ordering::Release);
        return true;
    }
    let mut a: libc::pthread_key_t = 0;
    let mut b: libc::pthread_key_t = 0;
    let mut c: libc::pthread_key_t = 0;
    // SAFETY: valid out-pointers; no destructors.
    let ok = unsafe {
        libc::pthread_key_create(&mut a, None) == 0
            && libc::pthread_key_create(&mut b, None) == 0
            && libc::pthread_key_create(&mut c, None) == 0
    };
    if late && (!ok || [a, b, c].iter().any(|&k| k >= INLINE_KEYS)) {
        if ok {
            // SAFETY: keys this function just created, never used.
            unsafe {
                libc::pthread_key_delete(a);
                libc::pthread_key_delete(b);
                libc::pthread_key_delete(c);
            }
        }
        IN_SHIM.store(TLS_KEY | words::GUARD as u32, Ordering::Release);
        TID.store(TLS_KEY | words::TID as u32, Ordering::Release);
        STACK_LOW.store(TLS_KEY | words::STACK_LOW as u32, Ordering::Release);
        return true;
    }
    if ok {
        IN_SHIM.store(a, Ordering::Release);
        TID.store(b, Ordering::Release);
        STACK_LOW.store(c, Ordering::Release);
    }
    ok
}

/// True when this module's state may be read from a signal handler: not when it is reached through
/// the Rust thread-local, whose first reading on a thread allocates its block (through the C
/// library's `malloc`, which the interrupted code may be inside).
pub fn signal_safe() -> bool {
    IN_SHIM.load(Ordering::Acquire) & TLS_KEY == 0
}

#[inline(always)]
fn get(key: u32) -> usize {
    if key & FAST_KEY != 0 {
        return words::get((key & 7) as usize);
    }
    if key & TLS_KEY != 0 {
        return words::get_slow((key & 7) as usize);
    }
    // SAFETY: `key` was created by `init` and is never deleted.
    unsafe { libc::pthread_getspecific(key) as usize }
}

#[inline(always)]
fn set(key: u32, v: usize) {
    if key & FAST_KEY != 0 {
        return words::set((key & 7) as usize, v);
    }
    if key & TLS_KEY != 0 {
        return words::set_slow((key & 7) as usize, v);
    }
    // SAFETY: as in `get`; for keys below 32 glibc stores the value without allocating.
    unsafe { libc::pthread_setspecific(key, v as *const libc::c_void) };
}

/// Proof that this thread is inside the shim; leaving scope lets the thread be traced again.
pub struct Guard(u32);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0 != NO_KEY {
            set(self.0, 0);
        }
    }
}

/// Enters the shim, or `None` when this thread is already inside it (any allocation the shim causes
/// must pass straight through) or is one of the shim's own threads.
#[inline]
pub fn enter() -> Option<Guard> {
    let key = IN_SHIM.load(Ordering::Acquire);
    if key == NO_KEY {
        return Some(Guard(NO_KEY));
    }
    if get(key) != 0 {
        return None;
    }
    set(key, INSIDE);
    Some(Guard(key))
}

/// As [`enter`], on a program thread the CUDA driver calls back from inside one of its functions
/// (CUPTI's callbacks): stacks captured while the guard is held leave out the driver's frames at
/// their top (see `stacks::capture`), as the wrappers' stacks have none.
#[inline]
pub fn enter_from_driver() -> Option<Guard> {
    let g = enter()?;
    if g.0 != NO_KEY {
        set(g.0, FROM_DRIVER);
    }
    Some(g)
}

/// True inside [`enter_from_driver`]'s guard.
#[inline]
pub fn from_driver() -> bool {
    let key = IN_SHIM.load(Ordering::Acquire);
    key != NO_KEY && get(key) == FROM_DRIVER
}

/// True when this thread is inside the shim or is one of its own threads: a cheaper question than
/// [`enter`] for a caller that calls nothing that could come back into the shim.
#[inline]
pub fn inside() -> bool {
    let key = IN_SHIM.load(Ordering::Acquire);
    key != NO_KEY && get(key) != 0
}

/// Marks the calling thread as never traced (the writer and sampler threads).
pub fn mark_thread_untraced() {
    let key = IN_SHIM.load(Ordering::Acquire);
    if key != NO_KEY {
        set(key, HELPER);
    }
}

/// True on one of the shim's own threads (writer, sampler), which must never make the program's
/// allocator give them an arena; false on the program's threads, inside a hook or not.
#[inline]
pub fn helper_thread() -> bool {
    let key = IN_SHIM.load(Ordering::Acquire);
    key != NO_KEY && get(key) == HELPER
}

/// Runs `f`, inside the shim on a program thread, so that what the C code it calls allocates comes
/// from the shim's own heap: for blocks that code keeps past the call and that the C library frees
/// later by itself, outside the shim. libunwind's thread-local block is one: allocated at the
/// thread's first unwind, inside the guard and so unseen, and freed by glibc when the thread's
/// stack is reused, where the hook saw a free of a block it had never seen allocated (one per
/// thread that unwound: 1999 of a program that ran 2000 threads one after another, and in the thin
/// mode each such free was counted, so its live blocks read 606 instead of 2002). A block of the
/// shim's heap goes back to it whoever frees it, and never reaches the program's figures.
pub fn with_own_heap<T>(f: impl FnOnce() -> T) -> T {
    let key = IN_SHIM.load(Ordering::Acquire);
    if key == NO_KEY || key & TLS_KEY != 0 || get(key) != INSIDE {
        return f();
    }
    set(key, OWN_HEAP);
    let r = f();
    set(key, INSIDE);
    r
}

/// True inside [`with_own_heap`].
pub fn own_heap_routed() -> bool {
    let key = IN_SHIM.load(Ordering::Acquire);
    key != NO_KEY && get(key) == OWN_HEAP
}

/// The kernel id of the calling thread, cached after the first call.
#[inline]
pub fn tid() -> u32 {
    let key = TID.load(Ordering::Acquire);
    if key != NO_KEY {
        let t = get(key);
        if t != 0 {
            return t as u32;
        }
    }
    let t = crate::sys::gettid();
    if key != NO_KEY {
        set(key, t as usize);
    }
    t
}

/// Bytes of stack left below the caller, `None` when the thread's stack bounds cannot be read. The
/// bounds are read once per thread, from the kernel (see `stack_bounds`).
#[inline]
pub fn stack_room() -> Option<usize> {
    let key = STACK_LOW.load(Ordering::Acquire);
    if key == NO_KEY {
        return None;
    }
    let mut low = get(key);
    if low == 0 {
        let here = &low as *const usize as usize;
        let main_thread = tid() == crate::sys::getpid();
        low = crate::record::stack_bounds::stack_low(here, main_thread).unwrap_or(UNKNOWN_STACK);
        set(key, low);
        // The shim's first sight of this thread: the crash handler needs room to run should it
        // overflow its stack (the main thread got its room at start).
        if !main_thread && !helper_thread() {
            crate::alt_stack::init_thread();
        }
        if !helper_thread() {
            with_own_heap(crate::record::unwind::touch_thread_state);
        }
    }
    let here = &low as *const usize as usize;
    (low != UNKNOWN_STACK).then(|| here.saturating_sub(low))
}

/// The low end of the calling thread's stack as [`stack_room`] last read it, if it did: a cached
/// value only, for a signal handler.
pub fn known_stack_low() -> Option<usize> {
    let key = STACK_LOW.load(Ordering::Acquire);
    if key == NO_KEY {
        return None;
    }
    let low = get(key);
    (low != 0 && low != UNKNOWN_STACK).then_some(low)
}

/// Forgets the cached thread id (after fork the surviving thread has a new one).
pub fn reset_tid() {
    let key = TID.load(Ordering::Acquire);
    if key != NO_KEY {
        set(key, 0);
    }
}
