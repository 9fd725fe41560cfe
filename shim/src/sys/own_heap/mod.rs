//! The shim's own heap: memory the shim maps itself for its Rust allocations and for the C
//! allocations made inside the shim (its helper threads' zstd contexts, the unwinder's caches).
//!
//! Why: glibc gives each thread that first calls `malloc` an arena that reserves 64 MiB of address
//! space; the writer and sampler each got one, and a program living under `RLIMIT_AS` paid for
//! them (about 156 MiB in all). This heap costs what it holds, in 64 KiB pages, plus a 1 MiB
//! reserve mapped at first use.
//!
//! Never: call the traced allocator or the shim's `mmap` hook (raw system calls only), or abort.
//! When the kernel refuses memory, pages come from the reserve and [`exhausted`] turns true: the
//! writer then ends the trace with a note and the program runs on. A thread that re-enters the heap
//! while it holds the heap's lock (a signal handler that allocates) is served by the real allocator
//! instead, and a free it makes waits on a lock-free list; fork takes the lock first, so a child
//! never inherits it held.
//!
//! # Safety
//! The free lists, page cursors and reserve cursor are touched only under `LOCK`. Every block
//! handed out lies in the first 64 KiB of a mapping made by `units`, whose first bytes hold a
//! [`PageHeader`] written when the mapping was made; a pointer is treated as the heap's only when
//! `units::owns` says so, so foreign pointers are never read. A free block's first word links the
//! free list (every class is at least 16 bytes).
#![allow(unsafe_code)]

mod units;

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use units::UNIT;

const MIN: usize = 16;
/// Size classes 16 B, 32 B ... 16 KiB, a power of two each; larger blocks get a mapping each.
const CLASSES: usize = 11;
const MAX_SMALL: usize = MIN << (CLASSES - 1);
/// The page header's room: blocks start 64 bytes into their page, so a class of 64 B or more is
/// aligned to 64.
const HEADER: usize = 64;
const LARGE: usize = usize::MAX;
/// A large block cut from the reserve: never unmapped.
const LARGE_RESERVED: usize = usize::MAX - 1;
/// The reserve covers the largest single request the writer makes while it still runs (a frame
/// buffer or a table doubling, 1-2 MiB) and the end of the trace after it.
const RESERVE_BYTES: usize = 64 * UNIT;

#[repr(C)]
struct PageHeader {
    /// The size class, or `LARGE`/`LARGE_RESERVED`.
    class: usize,
    /// A large block's mapping length from the page start.
    len: usize,
}

struct State {
    free: [usize; CLASSES],
    next: [usize; CLASSES],
    end: [usize; CLASSES],
    reserve: usize,
    reserve_end: usize,
}

struct Shared(UnsafeCell<State>);

// SAFETY: the state is only reached through `Locked`, which holds `LOCK`.
unsafe impl Sync for Shared {}

static STATE: Shared = Shared(UnsafeCell::new(State {
    free: [0; CLASSES],
    next: [0; CLASSES],
    end: [0; CLASSES],
    reserve: 0,
    reserve_end: 0,
}));
/// The holder's `pthread_self`, 0 when free.
static LOCK: AtomicUsize = AtomicUsize::new(0);

/// This thread, as the lock knows it: `pthread_self` reads the thread pointer, no system call.
#[inline]
fn me() -> usize {
    // SAFETY: pthread_self has no preconditions.
    (unsafe { libc::pthread_self() } as usize).max(1)
}
/// Blocks freed while their thread held the lock (from a signal handler), linked through their
/// first word; taken back at the next lock.
static DEFERRED: AtomicUsize = AtomicUsize::new(0);
static EXHAUSTED: AtomicBool = AtomicBool::new(false);
/// Called (under the lock) when the kernel first refuses memory: `fn()` as an address, 0 for none.
static ON_EXHAUSTED: AtomicUsize = AtomicUsize::new(0);

/// The kernel refused memory: says so once.
fn refused() {
    if !EXHAUSTED.swap(true, Ordering::AcqRel) {
        let f = ON_EXHAUSTED.load(Ordering::Acquire);
        if f != 0 {
            // SAFETY: a nonzero value is the `fn()` stored by `init`.
            let f: fn() = unsafe { std::mem::transmute::<usize, fn()>(f) };
            f();
        }
    }
}

/// The heap's lock, held; `None` from [`Locked::take`] means this thread already holds it.
struct Locked(&'static mut State);

impl Locked {
    fn take() -> Option<Locked> {
        let me = me();
        let mut spins = 0u32;
        loop {
            match LOCK.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(owner) if owner == me => return None,
                Err(_) => {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        // SAFETY: sched_yield has no preconditions.
                        unsafe { libc::sched_yield() };
                    }
                }
            }
        }
        // SAFETY: the lock is held, so this is the only reference to the state.
        let mut held = Locked(unsafe { &mut *STATE.0.get() });
        held.take_deferred();
        Some(held)
    }

    fn take_deferred(&mut self) {
        let mut p = DEFERRED.swap(0, Ordering::Acquire);
        while p != 0 {
            // SAFETY: a deferred block is a heap block whose first word links the next one.
            let next = unsafe { *(p as *const usize) };
            self.release(p);
            p = next;
        }
    }

    fn alloc(&mut self, size: usize, align: usize) -> *mut c_void {
        match class_of(size, align) {
            Some(c) => self.small(c),
            None => self.large(size, align),
        }
    }

    fn small(&mut self, c: usize) -> *mut c_void {
        let head = self.0.free[c];
        if head != 0 {
            // SAFETY: a free block's first word links the next free block of its class.
            self.0.free[c] = unsafe { *(head as *const usize) };
            return head as *mut c_void;
        }
        let size = MIN << c;
        if self.0.next[c] == 0 || self.0.next[c] + size > self.0.end[c] {
            let Some(page) = self.pages(UNIT) else {
                return std::ptr::null_mut();
            };
            // SAFETY: a fresh page of the heap's, writable, header at its start.
            unsafe {
                (page as *mut PageHeader).write(PageHeader {
                    class: c,
                    len: UNIT,
                })
            };
            self.0.next[c] = page + HEADER;
            self.0.end[c] = page + UNIT;
        }
        let p = self.0.next[c];
        self.0.next[c] += size;
        p as *mut c_void
    }

    fn large(&mut self, size: usize, align: usize) -> *mut c_void {
        let off = HEADER.max(align);
        let Some(len) = size.checked_add(off) else {
            return std::ptr::null_mut();
        };
        let (base, class) = match units::map(len) {
            Some((base, mapped)) => (base, (LARGE, mapped)),
            None => {
                refused();
                match self.cut_reserve(len) {
                    Some(base) => (base, (LARGE_RESERVED, len)),
                    None => return std::ptr::null_mut(),
                }
            }
        };
        // SAFETY: `base` starts a fresh mapping (or reserve piece) of at least `len` bytes.
        unsafe {
            (base as *mut PageHeader).write(PageHeader {
                class: class.0,
                len: class.1,
            })
        };
        (base + off) as *mut c_void
    }

    /// A fresh unit-aligned range of `len` bytes: mapped, or cut from the reserve once the kernel
    /// refuses.
    fn pages(&mut self, len: usize) -> Option<usize> {
        if let Some((base, _)) = units::map(len) {
            return Some(base);
        }
        refused();
        self.cut_reserve(len)
    }

    fn cut_reserve(&mut self, len: usize) -> Option<usize> {
        let s = &mut *self.0;
        let len = len.checked_next_multiple_of(UNIT)?;
        if s.reserve + len > s.reserve_end || s.reserve == 0 {
            return None;
        }
        let base = s.reserve;
        s.reserve += len;
        units::adopt(base);
        Some(base)
    }

    fn release(&mut self, p: usize) {
        let page = p & !(UNIT - 1);
        // SAFETY: `p` is a heap block, so its page starts with a header.
        let header = unsafe { &*(page as *const PageHeader) };
        match header.class {
            LARGE => units::unmap(page, header.len),
            LARGE_RESERVED => {}
            c => {
                let s = &mut *self.0;
                // SAFETY: the block is free now; its first word links the list.
                unsafe { *(p as *mut usize) = s.free[c] };
                s.free[c] = p;
            }
        }
    }

    fn ensure_reserve(&mut self) {
        let s = &mut *self.0;
        if s.reserve_end == 0 {
            if let Some((base, len)) = units::map(RESERVE_BYTES) {
                s.reserve = base;
                s.reserve_end = base + len;
            } else {
                s.reserve_end = 1;
            }
        }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        LOCK.store(0, Ordering::Release);
    }
}

fn class_of(size: usize, align: usize) -> Option<usize> {
    if size > MAX_SMALL || align > HEADER {
        return None;
    }
    let s = size.max(align).max(MIN).next_power_of_two();
    Some((s.trailing_zeros() - MIN.trailing_zeros()) as usize)
}

/// True when `p` is a block of this heap (asked by every `free`).
#[inline(always)]
pub fn owns(p: *mut c_void) -> bool {
    units::owns(p as usize)
}

/// True once the kernel has refused this heap memory: the trace is to end.
#[inline]
pub fn exhausted() -> bool {
    EXHAUSTED.load(Ordering::Acquire)
}

/// A block of `size` bytes aligned to `align` (a power of two); null when no memory is left.
pub fn alloc(size: usize, align: usize) -> *mut c_void {
    if align > UNIT / 2 {
        return crate::sys::real::memalign(align, size);
    }
    match Locked::take() {
        Some(mut held) => {
            held.ensure_reserve();
            held.alloc(size, align)
        }
        None if align <= MIN => crate::sys::real::malloc(size),
        None => crate::sys::real::memalign(align, size),
    }
}

/// A zeroed block of `n * size` bytes.
pub fn calloc(n: usize, size: usize) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        return std::ptr::null_mut();
    };
    let p = alloc(total, MIN);
    if !p.is_null() && owns(p) {
        // SAFETY: a block of at least `total` bytes just handed out (reused blocks hold old data).
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, total) };
    } else if !p.is_null() {
        // The real allocator served a re-entered thread; its calloc zeroes for us.
        crate::sys::real::free(p);
        return crate::sys::real::calloc(n, size);
    }
    p
}

/// Frees a block for which [`owns`] is true.
pub fn free(p: *mut c_void) {
    match Locked::take() {
        Some(mut held) => held.release(p as usize),
        None => {
            let mut head = DEFERRED.load(Ordering::Relaxed);
            loop {
                // SAFETY: the block is being freed; its first word is ours to link with.
                unsafe { *(p as *mut usize) = head };
                match DEFERRED.compare_exchange_weak(
                    head,
                    p as usize,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(h) => head = h,
                }
            }
        }
    }
}

/// Bytes usable in a block for which [`owns`] is true.
pub fn usable_size(p: *mut c_void) -> usize {
    let page = p as usize & !(UNIT - 1);
    // SAFETY: `p` is a heap block, so its page starts with a header.
    let header = unsafe { &*(page as *const PageHeader) };
    match header.class {
        LARGE | LARGE_RESERVED => page + header.len - p as usize,
        c => MIN << c,
    }
}

/// `realloc` of a block for which [`owns`] is true (or null); the block stays in this heap.
pub fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        return alloc(size, MIN);
    }
    let old = usable_size(p);
    if size <= old && size > old / 4 {
        return p;
    }
    let q = alloc(size.max(1), MIN);
    if !q.is_null() {
        // SAFETY: both blocks hold at least min(old, size) bytes and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(size)) };
        free(p);
    }
    q
}

/// True when the calling thread holds the heap's lock (a signal handler asking whether anything
/// it waits for could need it).
pub fn held_here() -> bool {
    LOCK.load(Ordering::Relaxed) == me()
}

/// Registers the fork handlers (fork waits for the lock, so a child never inherits it held by a
/// thread it does not have) and `on_exhausted`, called once when the kernel first refuses memory
/// (only atomics: it runs under the heap's lock). Called once, at start, before any helper thread
/// exists.
pub fn init(on_exhausted: fn()) {
    ON_EXHAUSTED.store(on_exhausted as usize, Ordering::Release);
    extern "C" fn prepare() {
        let me = me();
        if LOCK.load(Ordering::Relaxed) == me {
            return;
        }
        std::mem::forget(Locked::take());
    }
    extern "C" fn release() {
        LOCK.store(0, Ordering::Release);
    }
    // SAFETY: plain extern "C" handlers that live as long as the process.
    unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
}

/// In a child made by a raw `clone` or `SYS_fork` (no fork handler ran): the lock may have been
/// held by a thread the child does not have.
pub fn after_raw_fork() {
    let me = me();
    if LOCK.load(Ordering::Relaxed) != me {
        LOCK.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_blocks_are_aligned_reused_and_owned() {
        let a = alloc(24, 8);
        let b = alloc(24, 8);
        assert!(owns(a) && owns(b) && a != b);
        assert_eq!(usable_size(a), 32);
        assert_eq!(a as usize % 32, 0);
        free(a);
        assert_eq!(
            alloc(20, 8),
            a,
            "a freed block of the class is handed out again"
        );
        let c = alloc(100, 64);
        assert_eq!(c as usize % 64, 0);
        for p in [b, c] {
            free(p);
        }
    }

    #[test]
    fn large_blocks_get_a_mapping_each_and_realloc_keeps_the_bytes() {
        let p = alloc(100_000, 16) as *mut u8;
        assert!(owns(p.cast()));
        // SAFETY: a block of 100000 bytes.
        unsafe { std::ptr::write_bytes(p, 7, 100_000) };
        let q = realloc(p.cast(), 300_000) as *mut u8;
        assert!(owns(q.cast()) && usable_size(q.cast()) >= 300_000);
        // SAFETY: the first 100000 bytes were copied over.
        assert!(unsafe { std::slice::from_raw_parts(q, 100_000) }
            .iter()
            .all(|&b| b == 7));
        let z = calloc(10, 20) as *mut u8;
        // SAFETY: a zeroed block of 200 bytes.
        assert!(unsafe { std::slice::from_raw_parts(z, 200) }
            .iter()
            .all(|&b| b == 0));
        free(q.cast());
        free(z.cast());
        assert!(!owns(q.cast()), "an unmapped block is no longer the heap's");
    }
}
