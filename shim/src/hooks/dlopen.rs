//! `dlopen`, watched for `RTLD_DEEPBIND`: a library opened so binds its own calls to `malloc` and
//! `free` to the C library ahead of the global scope, past the shim. Its import table is rewritten
//! to the shim's hooks (as `memshim attach` rewrites a running program's, `crate::attach::got`) at
//! the program's next `dlsym`, the moment a program reaches into a library it opened: what the
//! library allocates from then on is in the trace. What it allocated while it loaded (its
//! constructors) is not, and the trace says so in a note naming the library. Attached (`memshim
//! attach`), every library opened is rebound so, whatever its mode: the shim is not in the global
//! scope ahead of the C library there.
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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::sys::real;

/// Where the trampoline jumps: glibc's `dlopen`.
static REAL_DLOPEN_TARGET: AtomicUsize = AtomicUsize::new(0);
/// A library was opened with `RTLD_DEEPBIND`, or while attached, and its import table is still to
/// be rewritten.
static REBIND_PENDING: AtomicBool = AtomicBool::new(false);
/// The note about libraries opened after attach was written.
static ATTACHED_NOTE: AtomicBool = AtomicBool::new(false);

/// Rewrites the import tables still bound past the shim (see the module note). Called from
/// `dlsym`, never from a traced call: it takes the loader's lock.
pub fn rebind_pending() {
    if !REBIND_PENDING.load(Ordering::Relaxed) || !REBIND_PENDING.swap(false, Ordering::AcqRel) {
        return;
    }
    let own = rebind_pending as fn() as usize;
    crate::record::recorder::lifecycle(|| {
        // Attached, the new object's own dlopen and dlsym are redirected too, for what it opens.
        let targets = if crate::attach::attached() {
            super::attach::attached_targets()
        } else {
            super::attach::targets()
        };
        crate::attach::got::patch(&targets, own);
        crate::attach::after_rebind();
    });
}

extern "C" fn note(file: *const c_char, mode: c_int) {
    if REAL_DLOPEN_TARGET.load(Ordering::Relaxed) == 0 {
        let p = real::dlsym(libc::RTLD_NEXT, c"dlopen");
        REAL_DLOPEN_TARGET.store(p as usize, Ordering::Relaxed);
    }
    if file.is_null() {
        return;
    }
    if crate::attach::attached() {
        // Its calls bind to the C library, past the shim, which no preload put ahead of it.
        REBIND_PENDING.store(true, Ordering::Release);
        if !ATTACHED_NOTE.swap(true, Ordering::AcqRel) {
            crate::record::recorder::lifecycle(|| {
                crate::channel::note("libraries opened after attach are redirected to memshim at the program's next dlsym: what they allocated while loading (their constructors) is not in this trace")
            });
        }
        return;
    }
    if mode & libc::RTLD_DEEPBIND == 0 {
        return;
    }
    // SAFETY: dlopen's contract: a non-null `file` is a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(file) };
    REBIND_PENDING.store(true, Ordering::Release);
    crate::record::recorder::lifecycle(|| {
        crate::channel::note(&format!(
            "{} was opened with RTLD_DEEPBIND: its own calls to malloc and free bypass memshim until the program's next dlsym, so what it allocated while loading is not in this trace",
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
