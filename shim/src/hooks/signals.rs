//! `sigaction` and `signal`: where the shim's crash handler stands in for a default action (see
//! `crash`), the program's own call takes that place back, and a query answers "default".
use std::ffi::c_int;

use crate::{crash, sys::real};

/// `sigaction`.
///
/// # Safety
/// As sigaction requires: `act` and `old` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if !crash::handles(sig) {
        // SAFETY: a non-null `act` is readable, per the contract.
        if !act.is_null() && unsafe { (*act).sa_sigaction } == libc::SIG_DFL && crash::watches(sig)
        {
            return crash::set_default_keeping_handler(sig, || real::sigaction(sig, act, old));
        }
        return real::sigaction(sig, act, old);
    }
    // What the program saw before this call: the default, as the shim keeps it.
    // SAFETY: an all-zero sigaction is a valid value.
    let mut before: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `before` is a valid out-buffer.
    unsafe { crash::report_view(sig, &mut before) };
    if act.is_null() {
        // SAFETY: the caller's `old`, per the contract.
        unsafe { old.as_mut().map(|o| *o = before) };
        return 0;
    }
    // SAFETY: a non-null `act` is readable, per the contract.
    let r = if unsafe { (*act).sa_sigaction } == libc::SIG_DFL {
        // The default asked for: the shim's handler keeps standing in for it.
        crash::set_default_keeping_handler(sig, || real::sigaction(sig, act, std::ptr::null_mut()))
    } else {
        crash::step_aside(sig);
        real::sigaction(sig, act, std::ptr::null_mut())
    };
    if r == 0 {
        // SAFETY: as above.
        unsafe { old.as_mut().map(|o| *o = before) };
    }
    r
}

/// `sigaltstack`: an alternate stack that the shim set (see `alt_stack`) reads as none.
///
/// # Safety
/// As sigaltstack requires: `ss` and `old` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn sigaltstack(ss: *const libc::stack_t, old: *mut libc::stack_t) -> c_int {
    let r = real::sigaltstack(ss, old);
    // SAFETY: on success the real call wrote `old`, which the caller vouches for.
    if r == 0 && !old.is_null() && crate::alt_stack::is_ours(unsafe { (*old).ss_sp }) {
        // SAFETY: as above.
        unsafe {
            (*old).ss_sp = std::ptr::null_mut();
            (*old).ss_size = 0;
            (*old).ss_flags = libc::SS_DISABLE;
        }
    }
    r
}

/// `signal`.
#[no_mangle]
pub extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    let ours = crash::handles(sig);
    if !ours && handler == libc::SIG_DFL && crash::watches(sig) {
        return crash::set_default_keeping_handler(sig, || real::signal(sig, handler));
    }
    if ours && handler == libc::SIG_DFL {
        let r = crash::set_default_keeping_handler(sig, || real::signal(sig, handler));
        // The previous disposition, as the program knew it: the default.
        return if r == libc::SIG_ERR { r } else { libc::SIG_DFL };
    }
    if ours {
        crash::step_aside(sig);
    }
    let previous = real::signal(sig, handler);
    if ours && previous != libc::SIG_ERR {
        libc::SIG_DFL
    } else {
        previous
    }
}
