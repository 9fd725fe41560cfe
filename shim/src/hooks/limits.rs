//! Resource limits the program sets on itself: `setrlimit`, `prlimit` (and their `64` names, the
//! same functions on 64-bit glibc). Before a limit on the size of the files it writes
//! (`RLIMIT_FSIZE`) takes effect, the trace takes the room it will need past it (see
//! `writer::output`); then the real call is made unchanged, and its result returned.
//!
//! The raw `syscall(SYS_setrlimit | SYS_prlimit64, ...)` reaches [`before`] from the `syscall` hook.
use std::ffi::c_int;

use crate::{channel, record::guard, sys, sys::real};

/// Called before a limit is set on process `pid` (0: the caller's).
pub(super) fn before(pid: i64, resource: i64, limit: *const libc::rlimit) {
    if resource != i64::from(libc::RLIMIT_FSIZE as c_int) || limit.is_null() {
        return;
    }
    if pid != 0 && pid != i64::from(sys::getpid()) {
        return;
    }
    // Not the shim's own raising of a limit for its last writes (a shim thread), nor from inside a
    // hook: `enter` refuses both.
    let Some(_inside) = guard::enter() else {
        return;
    };
    // Read through the kernel: a bad pointer is the real call's EFAULT to report, not a crash.
    let mut bytes = [0u8; std::mem::size_of::<libc::rlimit>()];
    if !sys::own_memory::read_own_memory(guard::tid(), limit as usize, &mut bytes) {
        return;
    }
    let mut soft = [0u8; 8];
    soft.copy_from_slice(&bytes[..8]);
    if u64::from_ne_bytes(soft) != libc::RLIM_INFINITY {
        channel::before_size_limit(u64::from_ne_bytes(soft));
    }
}

/// `setrlimit`.
#[no_mangle]
pub extern "C" fn setrlimit(resource: c_int, limit: *const libc::rlimit) -> c_int {
    before(0, i64::from(resource), limit);
    real::setrlimit(resource, limit)
}

/// `setrlimit64`.
#[no_mangle]
pub extern "C" fn setrlimit64(resource: c_int, limit: *const libc::rlimit) -> c_int {
    setrlimit(resource, limit)
}

/// `prlimit`.
#[no_mangle]
pub extern "C" fn prlimit(
    pid: libc::pid_t,
    resource: c_int,
    limit: *const libc::rlimit,
    old: *mut libc::rlimit,
) -> c_int {
    before(i64::from(pid), i64::from(resource), limit);
    real::prlimit(pid, resource, limit, old)
}

/// `prlimit64`.
#[no_mangle]
pub extern "C" fn prlimit64(
    pid: libc::pid_t,
    resource: c_int,
    limit: *const libc::rlimit,
    old: *mut libc::rlimit,
) -> c_int {
    prlimit(pid, resource, limit, old)
}
