//! The malloc family. C++ `new`/`delete`, `strdup` and friends arrive here through `malloc`/`free`.
use std::ffi::{c_int, c_void};

use memshim_trace::AllocFn;

use crate::{real, recorder};

/// `malloc`.
#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    let p = real::malloc(size);
    recorder::on_alloc(AllocFn::Malloc, p, size);
    p
}

/// `calloc`.
#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    let p = real::calloc(n, size);
    recorder::on_alloc(AllocFn::Calloc, p, n.wrapping_mul(size));
    p
}

/// `free`: recorded before the real free, so the address cannot be reused before the record.
#[no_mangle]
pub extern "C" fn free(p: *mut c_void) {
    recorder::on_free(p, false);
    real::free(p);
}

/// `realloc`: the free half is recorded first; a failure restores the old block.
#[no_mangle]
pub extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    recorder::on_free(p, true);
    let q = real::realloc(p, size);
    finish_realloc(AllocFn::Realloc, p, q, size);
    q
}

/// `reallocarray`.
#[no_mangle]
pub extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    recorder::on_free(p, true);
    let q = real::reallocarray(p, n, size);
    finish_realloc(AllocFn::Reallocarray, p, q, n.wrapping_mul(size));
    q
}

fn finish_realloc(func: AllocFn, old: *mut c_void, new: *mut c_void, size: usize) {
    if !new.is_null() {
        recorder::on_alloc(func, new, size);
    } else if !old.is_null() && size != 0 {
        // glibc frees the block for realloc(p, 0); any other null return leaves it live.
        recorder::on_realloc_failed(old);
    }
}

/// `posix_memalign`.
///
/// # Safety
/// `out` must be valid for a write, as posix_memalign requires.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    let r = real::posix_memalign(out, align, size);
    if r == 0 {
        // SAFETY: on success the real function wrote a pointer through `out`.
        recorder::on_alloc(AllocFn::PosixMemalign, unsafe { *out }, size);
    }
    r
}

/// `aligned_alloc`.
#[no_mangle]
pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    let p = real::aligned_alloc(align, size);
    recorder::on_alloc(AllocFn::AlignedAlloc, p, size);
    p
}

/// `memalign`.
#[no_mangle]
pub extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    let p = real::memalign(align, size);
    recorder::on_alloc(AllocFn::Memalign, p, size);
    p
}

/// `valloc`.
#[no_mangle]
pub extern "C" fn valloc(size: usize) -> *mut c_void {
    let p = real::valloc(size);
    recorder::on_alloc(AllocFn::Valloc, p, size);
    p
}

/// `pvalloc`.
#[no_mangle]
pub extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let p = real::pvalloc(size);
    recorder::on_alloc(AllocFn::Pvalloc, p, size);
    p
}
