//! The next allocator's malloc family, with the bootstrap arena serving calls made while resolving.
//!
//! # Safety
//! Each call goes to the address `dlsym` resolved for that very symbol (through `call!` or a
//! transmute to its C signature), or to glibc's `__libc_*` entry point or the raw system call that
//! stands in for it, with the caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

use super::symbols::*;

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

/// The next `malloc`.
#[inline]
pub fn malloc(size: usize) -> *mut c_void {
    call!(
        MALLOC,
        fn(usize) -> *mut c_void,
        (size),
        boot_or(
            || {
                // SAFETY: glibc's own allocator entry point, valid to call at any time.
                unsafe { __libc_malloc(size) }
            },
            size,
            16
        )
    )
}

/// The next `calloc`.
#[inline]
pub fn calloc(n: usize, size: usize) -> *mut c_void {
    call!(CALLOC, fn(usize, usize) -> *mut c_void, (n, size), {
        match n.checked_mul(size) {
            None => std::ptr::null_mut(),
            // The bootstrap arena is zero-initialised and never reused, so it is already calloc'd.
            Some(total) => boot_or(
                || {
                    // SAFETY: glibc's own allocator entry point.
                    unsafe { __libc_calloc(n, size) }
                },
                total,
                16,
            ),
        }
    })
}

/// The next `realloc`. Bootstrap blocks are moved out of the arena.
#[inline]
pub fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if bootstrap::owns(p) {
        return bootstrap::move_out(p, size, malloc);
    }
    call!(REALLOC, fn(*mut c_void, usize) -> *mut c_void, (p, size), {
        // SAFETY: `p` came from the same allocator glibc's realloc serves.
        unsafe { __libc_realloc(p, size) }
    })
}

/// `reallocarray` as glibc defines it: `realloc` with an overflow check. Not forwarded to the next
/// `reallocarray`, because glibc's calls `realloc` through the PLT, which would land in the shim's
/// `realloc` hook and record the call twice.
#[inline]
pub fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        Some(total) => realloc(p, total),
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// The next `free`; arena blocks are never freed.
#[inline]
pub fn free(p: *mut c_void) {
    if bootstrap::owns(p) {
        return;
    }
    call!(FREE, fn(*mut c_void) -> (), (p), {
        // SAFETY: `p` came from glibc's allocator (no other was found).
        unsafe { __libc_free(p) }
    })
}

/// `malloc_usable_size` of the next allocator, as the program asked for it (any pointer it passes,
/// null included); 0 for a bootstrap block (never handed to the program).
#[inline]
pub fn usable_size(p: *mut c_void) -> usize {
    if bootstrap::owns(p) {
        return 0;
    }
    call!(MALLOC_USABLE_SIZE, fn(*mut c_void) -> usize, (p), {
        // SAFETY: `p` is the program's argument, passed on unchanged (no other was found).
        unsafe { libc::malloc_usable_size(p) }
    })
}

/// The usable size of `p`, a live block of the next allocator that the recorder counts (not null:
/// just returned by it, or about to be handed back to it); 0 for a bootstrap block (never recorded).
#[inline]
pub fn live_usable_size(p: *mut c_void) -> usize {
    if bootstrap::owns(p) {
        return 0;
    }
    if glibc_heap() {
        // SAFETY: the next allocator is glibc's, and `p` is one of its live blocks (just returned
        // by it, or about to be handed back to it, which reads the same word).
        return unsafe { glibc_usable(p) };
    }
    usable_size(p)
}

/// glibc's usable size read from the chunk header, as its `malloc_usable_size` computes it for a
/// block in use, without also reading the next chunk's header to check that it is in use (a cache
/// miss that cost as much as the rest of the thin sampling mode's counting).
///
/// # Safety
/// `p` must be a live block of glibc's allocator: the word before it is its chunk's size, whose low
/// three bits are flags (bit 1: mapped on its own).
#[inline(always)]
unsafe fn glibc_usable(p: *mut c_void) -> usize {
    const IS_MMAPPED: usize = 2;
    const HEADER: usize = 2 * std::mem::size_of::<usize>();
    // SAFETY: per the contract, the chunk header precedes `p`.
    let word = unsafe { *(p as *const usize).sub(1) };
    let size = word & !7;
    if word & IS_MMAPPED != 0 {
        size.saturating_sub(HEADER)
    } else {
        size.saturating_sub(HEADER / 2)
    }
}

/// Whether the next allocator is glibc's own (its `malloc` and `free`, so every block is one of
/// its chunks), as when no other allocator is preloaded; decided once symbols are resolved.
/// `malloc_usable_size` is not compared: the shim exports its own, so the name in this library
/// binds to the hook, never to glibc's (comparing it turned this path off for every process).
#[inline(always)]
fn glibc_heap() -> bool {
    const UNKNOWN: u8 = 0;
    const YES: u8 = 1;
    const NO: u8 = 2;
    static GLIBC: AtomicU8 = AtomicU8::new(UNKNOWN);
    match GLIBC.load(Ordering::Relaxed) {
        YES => true,
        NO => false,
        _ => {
            let (Some(m), Some(f)) = (MALLOC.get(), FREE.get()) else {
                return false;
            };
            let ours =
                m == __libc_malloc as *const () as usize && f == __libc_free as *const () as usize;
            GLIBC.store(if ours { YES } else { NO }, Ordering::Relaxed);
            ours
        }
    }
}

/// The next `posix_memalign`.
#[inline]
pub fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    call!(
        POSIX_MEMALIGN,
        fn(*mut *mut c_void, usize, usize) -> c_int,
        (out, align, size),
        {
            if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
                return libc::EINVAL;
            }
            let p = memalign(align, size);
            if p.is_null() {
                return libc::ENOMEM;
            }
            // SAFETY: the caller passes a valid out-pointer, as posix_memalign requires.
            unsafe { *out = p };
            0
        }
    )
}

/// The next `aligned_alloc`.
#[inline]
pub fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    call!(
        ALIGNED_ALLOC,
        fn(usize, usize) -> *mut c_void,
        (align, size),
        memalign(align, size)
    )
}

/// The next `memalign`.
#[inline]
pub fn memalign(align: usize, size: usize) -> *mut c_void {
    call!(
        MEMALIGN,
        fn(usize, usize) -> *mut c_void,
        (align, size),
        boot_or(
            || {
                // SAFETY: glibc's own allocator entry point.
                unsafe { __libc_memalign(align, size) }
            },
            size,
            align
        )
    )
}

/// The next `valloc`.
#[inline]
pub fn valloc(size: usize) -> *mut c_void {
    call!(
        VALLOC,
        fn(usize) -> *mut c_void,
        (size),
        memalign(page_size(), size)
    )
}

/// The next `pvalloc`.
#[inline]
pub fn pvalloc(size: usize) -> *mut c_void {
    let page = page_size();
    call!(PVALLOC, fn(usize) -> *mut c_void, (size), {
        memalign(page, size.div_ceil(page).max(1) * page)
    })
}

fn boot_or(f: impl FnOnce() -> *mut c_void, size: usize, align: usize) -> *mut c_void {
    if is_resolver() {
        bootstrap::alloc(size, align)
    } else {
        f()
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunk_header_gives_glibcs_usable_size() {
        // Small (tcache and bins), large and mapped-on-their-own blocks.
        let sizes = (1..2_000).chain([4_095, 65_536, 131_072, 300_000, 5 << 20]);
        for size in sizes {
            // SAFETY: glibc's allocator, called directly; the block is freed below.
            let p = unsafe { __libc_malloc(size) };
            assert!(!p.is_null());
            // SAFETY: `p` is a live glibc block, asked of glibc's own function.
            let exact = unsafe { libc::malloc_usable_size(p) };
            // SAFETY: as above.
            assert_eq!(unsafe { glibc_usable(p) }, exact, "a block of {size} B");
            // SAFETY: allocated above, freed once.
            unsafe { __libc_free(p) };
        }
        assert!(
            glibc_heap(),
            "glibc's allocator comes next in a test process"
        );
    }
}
