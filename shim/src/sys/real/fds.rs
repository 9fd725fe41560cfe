//! The next `close`, `dup2`, `dup3`, `close_range` and `closefrom`.
//!
//! # Safety
//! Each call goes to the address `dlsym` resolved for that very symbol (through `call!` or a
//! transmute to its C signature), or to glibc's `__libc_*` entry point or the raw system call that
//! stands in for it, with the caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_uint};

use super::symbols::*;

/// The next `close`.
pub fn close(fd: c_int) -> c_int {
    call!(CLOSE, fn(c_int) -> c_int, (fd), missing())
}

/// The next `dup2`.
pub fn dup2(old: c_int, new: c_int) -> c_int {
    call!(DUP2, fn(c_int, c_int) -> c_int, (old, new), missing())
}

/// The next `dup3`.
pub fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    call!(
        DUP3,
        fn(c_int, c_int, c_int) -> c_int,
        (old, new, flags),
        missing()
    )
}

/// The next `close_range`.
pub fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    call!(
        CLOSE_RANGE,
        fn(c_uint, c_uint, c_int) -> c_int,
        (first, last, flags),
        missing()
    )
}

/// The next `closefrom`.
pub fn closefrom(low: c_int) {
    call!(CLOSEFROM, fn(c_int) -> (), (low), ())
}
