//! The next `setrlimit` and `prlimit`.
//!
//! # Safety
//! Each call goes to the address `dlsym` resolved for that very symbol (through `call!`), with the
//! caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::c_int;

use super::symbols::*;

/// The next `setrlimit`.
pub fn setrlimit(resource: c_int, limit: *const libc::rlimit) -> c_int {
    call!(
        SETRLIMIT,
        fn(c_int, *const libc::rlimit) -> c_int,
        (resource, limit),
        missing()
    )
}

/// The next `prlimit`.
pub fn prlimit(
    pid: libc::pid_t,
    resource: c_int,
    limit: *const libc::rlimit,
    old: *mut libc::rlimit,
) -> c_int {
    call!(
        PRLIMIT,
        fn(libc::pid_t, c_int, *const libc::rlimit, *mut libc::rlimit) -> c_int,
        (pid, resource, limit, old),
        missing()
    )
}
