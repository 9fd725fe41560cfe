//! The next `sigaction` and `signal`.
//!
//! # Safety
//! Each call goes through `call!` to the address `dlsym` resolved for that very symbol, with its C
//! signature, and the caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::c_int;

use super::symbols::*;

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

/// The next `sigaltstack`.
pub fn sigaltstack(ss: *const libc::stack_t, old: *mut libc::stack_t) -> c_int {
    type S = *const libc::stack_t;
    type O = *mut libc::stack_t;
    call!(SIGALTSTACK, fn(S, O) -> c_int, (ss, old), missing())
}
