//! Per-thread state of the shim: the reentrancy guard and the cached thread id.
//!
//! Both are `const`-initialised thread-locals of `Cell` types, which have no destructor and need no
//! lazy registration, so reading them from any hook (even during thread teardown) is always valid and
//! never allocates.
use std::cell::Cell;

thread_local! {
    static IN_SHIM: Cell<bool> = const { Cell::new(false) };
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// Proof that this thread is inside the shim; leaving scope lets the thread be traced again.
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        IN_SHIM.with(|c| c.set(false));
    }
}

/// Enters the shim, or `None` when this thread is already inside it (any allocation the shim causes
/// must pass straight through) or is one of the shim's own threads.
#[inline]
pub fn enter() -> Option<Guard> {
    IN_SHIM.with(|c| {
        if c.get() {
            None
        } else {
            c.set(true);
            Some(Guard(()))
        }
    })
}

/// Marks the calling thread as never traced (the writer and sampler threads).
pub fn mark_thread_untraced() {
    IN_SHIM.with(|c| c.set(true));
}

/// The kernel id of the calling thread, cached after the first call.
#[inline]
pub fn tid() -> u32 {
    TID.with(|c| {
        let t = c.get();
        if t != 0 {
            return t;
        }
        let t = crate::sys::gettid();
        c.set(t);
        t
    })
}

/// Forgets the cached thread id (after fork the surviving thread has a new one).
pub fn reset_tid() {
    TID.with(|c| c.set(0));
}
