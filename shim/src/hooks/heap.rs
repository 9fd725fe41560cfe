//! The malloc family. C++ `new`/`delete`, `strdup` and friends arrive here through `malloc`/`free`.
//!
//! Each hook enters the guard before the real call and holds it until the call is recorded (see
//! `recorder::enter_heap`); a thread already inside the shim calls the allocator directly.
use std::ffi::{c_int, c_void};

use memshim_trace::AllocFn;

use crate::{record::recorder, sys::real};

/// `malloc`.
#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    let Some(g) = recorder::enter_heap() else {
        return real::malloc(size);
    };
    let p = real::malloc(size);
    recorder::on_alloc(&g, AllocFn::Malloc, p, size);
    p
}

/// `calloc`.
#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    let Some(g) = recorder::enter_heap() else {
        return real::calloc(n, size);
    };
    let p = real::calloc(n, size);
    recorder::on_alloc(&g, AllocFn::Calloc, p, n.wrapping_mul(size));
    p
}

/// `free`: recorded before the real free, so the address cannot be reused before the record.
#[no_mangle]
pub extern "C" fn free(p: *mut c_void) {
    let Some(g) = recorder::enter_heap() else {
        return real::free(p);
    };
    recorder::on_free(&g, p, false);
    real::free(p);
}

/// `realloc`: the free half is recorded first; a failure restores the old block.
#[no_mangle]
pub extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    let Some(g) = recorder::enter_heap() else {
        return real::realloc(p, size);
    };
    recorder::on_free(&g, p, true);
    let q = real::realloc(p, size);
    finish_realloc(&g, AllocFn::Realloc, p, q, size);
    q
}

/// `reallocarray`.
#[no_mangle]
pub extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    let Some(g) = recorder::enter_heap() else {
        return real::reallocarray(p, n, size);
    };
    recorder::on_free(&g, p, true);
    let q = real::reallocarray(p, n, size);
    finish_realloc(&g, AllocFn::Reallocarray, p, q, n.wrapping_mul(size));
    q
}

fn finish_realloc(
    g: &crate::record::guard::Guard,
    func: AllocFn,
    old: *mut c_void,
    new: *mut c_void,
    size: usize,
) {
    if !new.is_null() {
        recorder::on_alloc(g, func, new, size);
    } else if !old.is_null() && size != 0 {
        // glibc frees the block for realloc(p, 0); any other null return leaves it live.
        recorder::on_realloc_failed(g, old);
    }
}

/// `posix_memalign`.
///
/// # Safety
/// `out` must be valid for a write, as posix_memalign requires.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    let Some(g) = recorder::enter_heap() else {
        return real::posix_memalign(out, align, size);
    };
    let r = real::posix_memalign(out, align, size);
    if r == 0 {
        // SAFETY: on success the real function wrote a pointer through `out`.
        recorder::on_alloc(&g, AllocFn::PosixMemalign, unsafe { *out }, size);
    }
    r
}

/// Defines a hook for an allocation function of the form `f(args) -> pointer`.
macro_rules! alloc_hook {
    ($(#[$doc:meta])* $name:ident ($($arg:ident: $ty:ty),*) $func:expr, $size:expr) => {
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) -> *mut c_void {
            let Some(g) = recorder::enter_heap() else {
                return real::$name($($arg),*);
            };
            let p = real::$name($($arg),*);
            recorder::on_alloc(&g, $func, p, $size);
            p
        }
    };
}

alloc_hook!(
    /// `aligned_alloc`.
    aligned_alloc(align: usize, size: usize) AllocFn::AlignedAlloc, size
);
alloc_hook!(
    /// `memalign`.
    memalign(align: usize, size: usize) AllocFn::Memalign, size
);
alloc_hook!(
    /// `valloc`.
    valloc(size: usize) AllocFn::Valloc, size
);
alloc_hook!(
    /// `pvalloc`.
    pvalloc(size: usize) AllocFn::Pvalloc, size
);
