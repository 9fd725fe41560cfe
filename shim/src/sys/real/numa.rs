//! The next NUMA placement and CPU affinity calls (libnuma's and glibc's).
//!
//! # Safety
//! Each call goes to the address `dlsym` resolved for that very symbol (through `call!` or a
//! transmute to its C signature), or to glibc's `__libc_*` entry point or the raw system call that
//! stands in for it, with the caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

use super::symbols::*;

type Mask = *const std::ffi::c_ulong;

/// The next `mbind` (libnuma's).
pub fn mbind(
    a: *mut c_void,
    len: std::ffi::c_ulong,
    mode: c_int,
    mask: Mask,
    maxnode: std::ffi::c_ulong,
    flags: std::ffi::c_uint,
) -> std::ffi::c_long {
    call!(
        MBIND,
        fn(
            *mut c_void,
            std::ffi::c_ulong,
            c_int,
            Mask,
            std::ffi::c_ulong,
            std::ffi::c_uint,
        ) -> std::ffi::c_long,
        (a, len, mode, mask, maxnode, flags),
        missing() as std::ffi::c_long
    )
}
/// The next `set_mempolicy` (libnuma's).
pub fn set_mempolicy(mode: c_int, mask: Mask, maxnode: std::ffi::c_ulong) -> std::ffi::c_long {
    call!(
        SET_MEMPOLICY,
        fn(c_int, Mask, std::ffi::c_ulong) -> std::ffi::c_long,
        (mode, mask, maxnode),
        missing() as std::ffi::c_long
    )
}
/// The next `migrate_pages` (libnuma's).
pub fn migrate_pages(
    pid: c_int,
    maxnode: std::ffi::c_ulong,
    old: Mask,
    new: Mask,
) -> std::ffi::c_long {
    call!(
        MIGRATE_PAGES,
        fn(c_int, std::ffi::c_ulong, Mask, Mask) -> std::ffi::c_long,
        (pid, maxnode, old, new),
        missing() as std::ffi::c_long
    )
}
/// The next `move_pages` (libnuma's).
pub fn move_pages(
    pid: c_int,
    count: std::ffi::c_ulong,
    pages: *mut *mut c_void,
    nodes: *const c_int,
    status: *mut c_int,
    flags: c_int,
) -> std::ffi::c_long {
    call!(
        MOVE_PAGES,
        fn(
            c_int,
            std::ffi::c_ulong,
            *mut *mut c_void,
            *const c_int,
            *mut c_int,
            c_int,
        ) -> std::ffi::c_long,
        (pid, count, pages, nodes, status, flags),
        missing() as std::ffi::c_long
    )
}
/// The next `sched_setaffinity`.
pub fn sched_setaffinity(pid: libc::pid_t, size: usize, mask: *const libc::cpu_set_t) -> c_int {
    call!(
        SCHED_SETAFFINITY,
        fn(libc::pid_t, usize, *const libc::cpu_set_t) -> c_int,
        (pid, size, mask),
        missing()
    )
}
/// The next `pthread_setaffinity_np`.
pub fn pthread_setaffinity_np(
    t: libc::pthread_t,
    size: usize,
    mask: *const libc::cpu_set_t,
) -> c_int {
    call!(
        PTHREAD_SETAFFINITY_NP,
        fn(libc::pthread_t, usize, *const libc::cpu_set_t) -> c_int,
        (t, size, mask),
        libc::ENOSYS
    )
}
