//! glibc's `syscall`, for what it can do behind the shim's back: release a descriptor the shim keeps
//! (`SYS_close`, `SYS_dup2`, `SYS_dup3`, `SYS_close_range`, told to `owned_fds`), limit the size
//! of files (`SYS_setrlimit`, `SYS_prlimit64`: see `limits`), or make a process.
//!
//! Processes made without `fork`: glibc's `syscall` with `SYS_fork`, `SYS_vfork`-free `SYS_clone`
//! or `SYS_clone3`, and glibc's `clone` wrapper. No `pthread_atfork` handler runs in such a child, so
//! without these hooks it would keep sending into its parent's channel, which no writer drains
//! there, and hang once it was full. A child that shares its parent's memory (`CLONE_VM`: a thread
//! or a vfork) is left alone: it is not a process of its own.
//!
//! `syscall` is variadic in C; on x86-64 every one of its arguments travels in a register or the
//! caller's stack slot that a seven-argument C function reads, so a fixed signature sees them all
//! (the unused ones are whatever the registers held, and the real `syscall` ignores them too).
use std::ffi::{c_int, c_long, c_void};

use crate::sys::real::{self, CloneFn};

const CLONE_VM: u64 = libc::CLONE_VM as u64;

/// Whether a `clone`/`clone3` with these flags makes a new process (its own copy of memory).
fn new_process(flags: u64) -> bool {
    flags & CLONE_VM == 0
}

/// `syscall`.
#[no_mangle]
pub extern "C" fn syscall(
    n: c_long,
    a0: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
) -> c_long {
    match n {
        libc::SYS_close => crate::sys::owned_fds::released(a0 as c_int, a0 as c_int),
        // A new disposition set behind `sigaction`'s back: the shim's handler is gone.
        libc::SYS_rt_sigaction if a1 != 0 => crate::crash::step_aside(a0 as c_int),
        libc::SYS_dup2 | libc::SYS_dup3 if a0 != a1 => {
            crate::sys::owned_fds::released(a1 as c_int, a1 as c_int)
        }
        libc::SYS_setrlimit => super::limits::before(0, a0, a1 as *const libc::rlimit),
        libc::SYS_prlimit64 if a2 != 0 => super::limits::before(a0, a1, a2 as *const libc::rlimit),
        libc::SYS_close_range if a2 as u32 & libc::CLOSE_RANGE_CLOEXEC == 0 => {
            crate::sys::owned_fds::released(
                (a0 as u32).min(i32::MAX as u32) as c_int,
                (a1 as u32).min(i32::MAX as u32) as c_int,
            )
        }
        _ => {}
    }
    let forks = match n {
        libc::SYS_fork => true,
        libc::SYS_clone => new_process(a0 as u64),
        libc::SYS_clone3 => clone3_flags(a0 as *const u64, a1 as usize).is_some_and(new_process),
        _ => false,
    };
    let r = real::syscall(n, [a0, a1, a2, a3, a4, a5]);
    if forks && r == 0 {
        crate::session::after_raw_fork();
    }
    r
}

/// The flags of a `clone3` argument block, read only when it is large enough to hold them.
fn clone3_flags(args: *const u64, size: usize) -> Option<u64> {
    if args.is_null() || size < std::mem::size_of::<u64>() {
        return None;
    }
    // SAFETY: the caller hands the kernel `size` readable bytes at `args`, the first word of which
    // is the flags (struct clone_args); an unreadable block makes the real call fail with EFAULT
    // anyway, but we only read it after checking it is non-null and large enough.
    Some(unsafe { args.read_unaligned() })
}

/// What a new process made by `clone` runs first: the shim's fork-child step, then the program's.
#[repr(C)]
struct Start {
    f: CloneFn,
    arg: *mut c_void,
}

extern "C" fn start_child(p: *mut c_void) -> c_int {
    // SAFETY: `p` is the `Start` on the parent's stack at the moment of the clone; without CLONE_VM
    // the child has its own copy of that memory, which nothing else changes.
    let start = unsafe { &*(p as *const Start) };
    crate::session::after_raw_fork();
    let status = (start.f)(start.arg);
    // glibc's clone ends this thread alone (SYS_exit), which ends a process of one thread; the
    // shim's helpers would keep it alive, so when they are all that is left, the trace is closed
    // and the process ends with the same status.
    if crate::sys::threads::caller_alone() {
        crate::record::recorder::lifecycle(|| {
            crate::session::finish(memshim_trace::EndReason::Exit)
        });
        crate::sys::threads::exit_group(status);
    }
    status
}

/// `clone`.
#[no_mangle]
pub extern "C" fn clone(
    f: CloneFn,
    stack: *mut c_void,
    flags: c_int,
    arg: *mut c_void,
    parent_tid: *mut c_void,
    tls: *mut c_void,
    child_tid: *mut c_void,
) -> c_int {
    let tail = [parent_tid, tls, child_tid];
    if !new_process(flags as u32 as u64) {
        return real::clone(f, stack, flags, arg, tail);
    }
    let start = Start { f, arg };
    real::clone(
        start_child,
        stack,
        flags,
        &start as *const Start as *mut c_void,
        tail,
    )
}
