//! `dlopen`, watched for `RTLD_DEEPBIND`: a library opened so binds its own calls to `malloc` and
//! `free` to the C library ahead of the global scope, past the shim, and its allocations are not in
//! the trace. The trace says so (a note naming the library) instead of leaving a silent gap.
//!
//! The call itself goes on to glibc's `dlopen` as a tail jump, as the shim's `dlsym` does: glibc
//! finds a library's search path (RUNPATH) from its caller's return address, which a wrapper that
//! called it would change.
//!
//! # Safety
//! The x86-64 trampoline saves the two argument registers, calls `note` with the stack 16-byte
//! aligned, restores them and jumps to glibc's `dlopen` with the caller's frame untouched. `note`
//! resolves glibc's `dlopen` before it returns, so the jump target is never null.
#![cfg(target_arch = "x86_64")]

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sys::real;

/// Where the trampoline jumps: glibc's `dlopen`.
static REAL_DLOPEN_TARGET: AtomicUsize = AtomicUsize::new(0);

extern "C" fn note(file: *const c_char, mode: c_int) {
    if REAL_DLOPEN_TARGET.load(Ordering::Relaxed) == 0 {
        let p = real::dlsym(libc::RTLD_NEXT, c"dlopen");
        REAL_DLOPEN_TARGET.store(p as usize, Ordering::Relaxed);
    }
    if mode & libc::RTLD_DEEPBIND == 0 || file.is_null() {
        return;
    }
    // SAFETY: dlopen's contract: a non-null `file` is a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(file) };
    crate::record::recorder::lifecycle(|| {
        crate::channel::note(&format!(
            "{} was opened with RTLD_DEEPBIND: its own calls to malloc and free go to the C library past memshim, so its allocations are not in this trace",
            name.to_string_lossy()
        ))
    });
}

/// `dlopen`, as a naked trampoline: see the module note.
///
/// # Safety
/// Called by C with dlopen's contract: `file` is null or NUL-terminated.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlopen(file: *const c_char, mode: c_int) -> *mut std::ffi::c_void {
    std::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "sub rsp, 8",
        "call {note}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "jmp qword ptr [rip + {target}]",
        note = sym note,
        target = sym REAL_DLOPEN_TARGET,
    )
}
