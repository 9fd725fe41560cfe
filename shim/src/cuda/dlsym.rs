//! The shim's `dlsym`: hands back wrappers for the driver exports it tracks, and otherwise passes the
//! call to glibc's `dlsym` *as a tail jump*, so that glibc sees the original caller's return address.
//! That matters for `RTLD_NEXT`, whose meaning depends on who calls: an ordinary Rust wrapper would
//! make every `dlsym(RTLD_NEXT, ...)` in the process resolve relative to libmemshim.
//!
//! # Safety
//! The x86-64 trampoline saves the two argument registers, calls the filter with the stack 16-byte
//! aligned, restores them, and either returns the filter's answer or jumps to glibc's `dlsym` with
//! the caller's frame untouched. The filter resolves glibc's `dlsym` before it returns, so the jump
//! target is never null.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sys::real;

/// Where the trampoline jumps for every name the shim does not wrap.
static REAL_DLSYM_TARGET: AtomicUsize = AtomicUsize::new(0);

/// The wrapper for `name`, or null to let glibc answer.
extern "C" fn filter(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    if REAL_DLSYM_TARGET.load(Ordering::Relaxed) == 0 {
        REAL_DLSYM_TARGET.store(real::real_dlsym_addr(), Ordering::Relaxed);
    }
    #[cfg(not(test))]
    crate::hooks::dlopen::rebind_pending();
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: dlsym's contract: `name` is a NUL-terminated string. Checking two bytes first keeps
    // every other lookup cheap.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    // Attached, the driver is not traced (its pointers were fetched long before); a lookup made
    // now gets what it got before attach.
    if !bytes.starts_with(b"cu") || !crate::channel::cuda_enabled() || crate::attach::attached() {
        return std::ptr::null_mut();
    }
    let Ok(name) = std::str::from_utf8(bytes) else {
        return std::ptr::null_mut();
    };
    let _g = crate::record::guard::enter();
    catch_unwind(AssertUnwindSafe(|| {
        super::table::dlsym_wrapper(handle, name)
    }))
    .ok()
    .flatten()
    .unwrap_or(std::ptr::null_mut())
}

/// `dlsym`, as a naked trampoline: see the module note.
///
/// # Safety
/// Called by C with dlsym's contract: `name` is null or NUL-terminated.
#[cfg(all(target_arch = "x86_64", not(test)))]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    std::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "sub rsp, 8",
        "call {filter}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jz 2f",
        "ret",
        "2:",
        "jmp qword ptr [rip + {target}]",
        filter = sym filter,
        target = sym REAL_DLSYM_TARGET,
    )
}

/// Elsewhere, a plain wrapper (lookups with `RTLD_NEXT` then resolve relative to libmemshim).
#[cfg(all(not(target_arch = "x86_64"), not(test)))]
#[no_mangle]
pub extern "C" fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    let w = filter(handle, name);
    if !w.is_null() {
        return w;
    }
    real::real_dlsym_raw(handle, name)
}
