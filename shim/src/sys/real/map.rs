//! The next `mmap`, `munmap` and `mremap`, with raw system calls standing in when none is found.
//!
//! # Safety
//! Each call goes to the address `dlsym` resolved for that very symbol (through `call!` or a
//! transmute to its C signature), or to glibc's `__libc_*` entry point or the raw system call that
//! stands in for it, with the caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

use super::symbols::*;

/// The next `mmap`.
#[inline]
pub fn mmap(
    a: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    call!(
        MMAP,
        fn(*mut c_void, usize, c_int, c_int, c_int, libc::off_t) -> *mut c_void,
        (a, len, prot, flags, fd, off),
        raw_mmap(a, len, prot, flags, fd, off)
    )
}

fn raw_mmap(
    a: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    // SAFETY: the raw system call takes the caller's arguments unchanged, exactly as mmap would.
    unsafe { libc::syscall(libc::SYS_mmap, a, len, prot, flags, fd, off) as *mut c_void }
}

/// The next `munmap`.
#[inline]
pub fn munmap(a: *mut c_void, len: usize) -> c_int {
    call!(MUNMAP, fn(*mut c_void, usize) -> c_int, (a, len), {
        // SAFETY: the raw system call takes the caller's arguments unchanged.
        unsafe { libc::syscall(libc::SYS_munmap, a, len) as c_int }
    })
}

/// The next `mremap` (the variadic fifth argument is always passed; it is ignored without MREMAP_FIXED).
#[inline]
pub fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    call!(
        MREMAP,
        fn(*mut c_void, usize, usize, c_int, *mut c_void) -> *mut c_void,
        (old, old_len, new_len, flags, new_addr),
        {
            // SAFETY: the raw system call takes the caller's arguments unchanged.
            unsafe {
                libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr)
                    as *mut c_void
            }
        }
    )
}
