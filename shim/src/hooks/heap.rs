//! The malloc family. C++ `new`/`delete`, `strdup` and friends arrive here through `malloc`/`free`.
//!
//! Each hook enters the guard before the real call and holds it until the call is recorded (see
//! `recorder::enter_heap`). A call made on one of the shim's own threads is served by the shim's own
//! heap (a hook's own work on a program thread goes to the real allocator, untraced); `free` and
//! `realloc` hand that heap's blocks back to it whichever thread calls them.
use std::ffi::{c_int, c_void};

use memshim_trace::AllocFn;

use crate::record::recorder::{self, HeapCall};
use crate::sys::{own_heap, real};

/// `malloc`.
#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    let g = match recorder::enter_heap() {
        HeapCall::Traced(g) => g,
        HeapCall::Shim => return own_heap::alloc(size, 16),
        HeapCall::Untraced => return real::malloc(size),
    };
    let p = real::malloc(size);
    recorder::on_alloc(&g, AllocFn::Malloc, p, size);
    p
}

/// `calloc`.
#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    let g = match recorder::enter_heap() {
        HeapCall::Traced(g) => g,
        HeapCall::Shim => return own_heap::calloc(n, size),
        HeapCall::Untraced => return real::calloc(n, size),
    };
    let p = real::calloc(n, size);
    recorder::on_alloc(&g, AllocFn::Calloc, p, n.wrapping_mul(size));
    p
}

/// `free`: recorded before the real free, so the address cannot be reused before the record.
#[no_mangle]
pub extern "C" fn free(p: *mut c_void) {
    if own_heap::owns(p) {
        return own_heap::free(p);
    }
    let g = match recorder::enter_heap() {
        HeapCall::Traced(g) => g,
        HeapCall::Shim => return crate::sys::handed_back::free(p),
        HeapCall::Untraced => return real::free(p),
    };
    recorder::on_free(&g, p, false);
    real::free(p);
}

/// `realloc`: the free half is recorded first; a failure restores the old block.
#[no_mangle]
pub extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if own_heap::owns(p) {
        return own_heap::realloc(p, size);
    }
    let g = match recorder::enter_heap() {
        HeapCall::Traced(g) => g,
        HeapCall::Shim if p.is_null() => return own_heap::alloc(size, 16),
        HeapCall::Shim | HeapCall::Untraced => return real::realloc(p, size),
    };
    recorder::on_free(&g, p, true);
    let q = real::realloc(p, size);
    finish_realloc(&g, AllocFn::Realloc, p, q, size);
    q
}

/// `reallocarray`.
#[no_mangle]
pub extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    if own_heap::owns(p) || (p.is_null() && matches!(recorder::enter_heap(), HeapCall::Shim)) {
        let Some(total) = n.checked_mul(size) else {
            crate::sys::set_errno(libc::ENOMEM);
            return std::ptr::null_mut();
        };
        return own_heap::realloc(p, total);
    }
    let g = match recorder::enter_heap() {
        HeapCall::Traced(g) => g,
        HeapCall::Shim | HeapCall::Untraced => return real::reallocarray(p, n, size),
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
    if !old.is_null() && (!new.is_null() || size == 0) {
        recorder::on_realloc_done(g, old);
    }
    if !new.is_null() {
        recorder::on_alloc(g, func, new, size);
    } else if !old.is_null() && size != 0 {
        // glibc frees the block for realloc(p, 0); any other null return leaves it live.
        recorder::on_realloc_failed(g, old);
    }
}

/// `malloc_usable_size`: a block of the shim's own heap has no glibc chunk header to read.
#[no_mangle]
pub extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if own_heap::owns(p) {
        return own_heap::usable_size(p);
    }
    real::usable_size(p)
}

/// `posix_memalign`.
///
/// # Safety
/// `out` must be valid for a write, as posix_memalign requires.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    let g = match recorder::enter_heap() {
        HeapCall::Traced(g) => g,
        HeapCall::Shim => {
            if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
                return libc::EINVAL;
            }
            let p = own_heap::alloc(size, align);
            if p.is_null() {
                return libc::ENOMEM;
            }
            // SAFETY: the caller passes a valid out-pointer, as posix_memalign requires.
            unsafe { *out = p };
            return 0;
        }
        HeapCall::Untraced => return real::posix_memalign(out, align, size),
    };
    let r = real::posix_memalign(out, align, size);
    if r == 0 {
        // SAFETY: on success the real function wrote a pointer through `out`.
        recorder::on_alloc(&g, AllocFn::PosixMemalign, unsafe { *out }, size);
    }
    r
}

/// Defines a hook for an allocation function of the form `f(args) -> pointer`; inside the shim,
/// `$own` serves it from the shim's own heap.
macro_rules! alloc_hook {
    ($(#[$doc:meta])* $name:ident ($($arg:ident: $ty:ty),*) $func:expr, $size:expr, $own:expr) => {
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) -> *mut c_void {
            let g = match recorder::enter_heap() {
                HeapCall::Traced(g) => g,
                HeapCall::Shim => return $own,
                HeapCall::Untraced => return real::$name($($arg),*),
            };
            let p = real::$name($($arg),*);
            recorder::on_alloc(&g, $func, p, $size);
            p
        }
    };
}

alloc_hook!(
    /// `aligned_alloc`.
    aligned_alloc(align: usize, size: usize) AllocFn::AlignedAlloc, size,
    own_heap::alloc(size, align.max(16))
);
alloc_hook!(
    /// `memalign`.
    memalign(align: usize, size: usize) AllocFn::Memalign, size,
    own_heap::alloc(size, align.max(16))
);
alloc_hook!(
    /// `valloc`.
    valloc(size: usize) AllocFn::Valloc, size,
    own_heap::alloc(size, 4096)
);
alloc_hook!(
    /// `pvalloc`.
    pvalloc(size: usize) AllocFn::Pvalloc, size,
    own_heap::alloc(size.next_multiple_of(4096).max(4096), 4096)
);
