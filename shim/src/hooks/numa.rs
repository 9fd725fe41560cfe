//! NUMA placement (libnuma's `mbind`, `set_mempolicy`, `migrate_pages`, `move_pages` with target
//! nodes) and CPU affinity (`sched_setaffinity`, `pthread_setaffinity_np`), each recorded with its
//! arguments decoded. libnuma's own higher-level calls (`numa_alloc_onnode`, `numa_run_on_node`, ...)
//! go through these, so they appear in the recorded stacks rather than twice.
// `c_ulong` is 64 bits here but 32 on other targets, where the casts to u64 are not no-ops.
#![allow(clippy::unnecessary_cast)]
use std::ffi::{c_int, c_long, c_uint, c_ulong, c_void};

use memshim_trace::NumaFn;

use crate::{record::recorder, sys::real};

/// Masks longer than this many bits are read only this far (1024 nodes or CPUs).
const MAX_BITS: usize = 1024;

/// The set bits of a mask of `bits` bits at `mask`.
fn bits(mask: *const c_ulong, bits: usize) -> Vec<u32> {
    if mask.is_null() {
        return Vec::new();
    }
    let bits = bits.min(MAX_BITS);
    let words = bits.div_ceil(64);
    // SAFETY: the caller passed a mask of `bits` bits, as each call's contract requires.
    let mask = unsafe { std::slice::from_raw_parts(mask, words) };
    (0..bits)
        .filter(|&b| mask[b / 64] >> (b % 64) & 1 == 1)
        .map(|b| b as u32)
        .collect()
}

/// `mbind`.
#[no_mangle]
pub extern "C" fn mbind(
    a: *mut c_void,
    len: c_ulong,
    mode: c_int,
    mask: *const c_ulong,
    maxnode: c_ulong,
    flags: c_uint,
) -> c_long {
    let r = real::mbind(a, len, mode, mask, maxnode, flags);
    recorder::on_numa(
        NumaFn::Mbind,
        mode,
        || bits(mask, maxnode as usize),
        Vec::new,
        Vec::new,
        a as u64,
        len as u64,
        0,
        flags,
        r as i64,
    );
    r
}

/// `set_mempolicy`.
#[no_mangle]
pub extern "C" fn set_mempolicy(mode: c_int, mask: *const c_ulong, maxnode: c_ulong) -> c_long {
    let r = real::set_mempolicy(mode, mask, maxnode);
    recorder::on_numa(
        NumaFn::SetMempolicy,
        mode,
        || bits(mask, maxnode as usize),
        Vec::new,
        Vec::new,
        0,
        0,
        0,
        0,
        r as i64,
    );
    r
}

/// `migrate_pages`.
#[no_mangle]
pub extern "C" fn migrate_pages(
    pid: c_int,
    maxnode: c_ulong,
    old: *const c_ulong,
    new: *const c_ulong,
) -> c_long {
    let r = real::migrate_pages(pid, maxnode, old, new);
    recorder::on_numa(
        NumaFn::MigratePages,
        -1,
        || bits(new, maxnode as usize),
        || bits(old, maxnode as usize),
        Vec::new,
        0,
        0,
        pid as i64,
        0,
        r as i64,
    );
    r
}

/// `move_pages`: only moves (target nodes given) are placement calls; queries are not recorded.
///
/// # Safety
/// The pointers must satisfy move_pages' contract: `count` entries each.
#[no_mangle]
pub unsafe extern "C" fn move_pages(
    pid: c_int,
    count: c_ulong,
    pages: *mut *mut c_void,
    nodes: *const c_int,
    status: *mut c_int,
    flags: c_int,
) -> c_long {
    let r = real::move_pages(pid, count, pages, nodes, status, flags);
    if !nodes.is_null() {
        let targets = || {
            // SAFETY: move_pages' contract: `nodes` holds `count` entries.
            let n = unsafe { std::slice::from_raw_parts(nodes, (count as usize).min(1 << 20)) };
            let mut v: Vec<u32> = n.iter().filter(|&&x| x >= 0).map(|&x| x as u32).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        recorder::on_numa(
            NumaFn::MovePages,
            -1,
            targets,
            Vec::new,
            Vec::new,
            0,
            count as u64,
            pid as i64,
            flags as u32,
            r as i64,
        );
    }
    r
}

fn cpus(mask: *const libc::cpu_set_t, size: usize) -> Vec<u32> {
    bits(mask as *const c_ulong, size.saturating_mul(8))
}

/// `sched_setaffinity`.
#[no_mangle]
pub extern "C" fn sched_setaffinity(
    pid: libc::pid_t,
    size: usize,
    mask: *const libc::cpu_set_t,
) -> c_int {
    let r = real::sched_setaffinity(pid, size, mask);
    recorder::on_numa(
        NumaFn::SchedSetaffinity,
        -1,
        Vec::new,
        Vec::new,
        || cpus(mask, size),
        0,
        0,
        pid as i64,
        0,
        r as i64,
    );
    r
}

/// `pthread_setaffinity_np`.
#[no_mangle]
pub extern "C" fn pthread_setaffinity_np(
    t: libc::pthread_t,
    size: usize,
    mask: *const libc::cpu_set_t,
) -> c_int {
    let r = real::pthread_setaffinity_np(t, size, mask);
    // SAFETY: pthread_self has no preconditions.
    let own = t == unsafe { libc::pthread_self() };
    recorder::on_numa(
        NumaFn::PthreadSetaffinity,
        -1,
        Vec::new,
        Vec::new,
        || cpus(mask, size),
        0,
        0,
        if own { 0 } else { t as i64 },
        0,
        r as i64,
    );
    r
}
