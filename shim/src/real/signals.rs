//! The next `sigaction` and `signal`.
#![allow(unsafe_code)]

use std::ffi::c_int;

use super::*;

/// The next `sigaction`.
pub fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int {
    type A = *const libc::sigaction;
    type O = *mut libc::sigaction;
    call!(
        SIGACTION,
        fn(c_int, A, O) -> c_int,
        (sig, act, old),
        missing()
    )
}

/// The next `signal`.
pub fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    call!(
        SIGNAL,
        fn(c_int, libc::sighandler_t) -> libc::sighandler_t,
        (sig, handler),
        libc::SIG_ERR
    )
}
