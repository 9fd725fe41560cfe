//! The next exec family, `dlclose`, `_exit` and `_Exit`.
//!
//! # Safety
//! Each call goes to the address `dlsym` resolved for that very symbol (through `call!` or a
//! transmute to its C signature), or to glibc's `__libc_*` entry point or the raw system call that
//! stands in for it, with the caller's arguments unchanged (see `symbols`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use super::symbols::*;

type Argv = *const *const c_char;

/// The next `execve`.
pub fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    call!(
        EXECVE,
        fn(*const c_char, Argv, Argv) -> c_int,
        (path, argv, envp),
        missing()
    )
}
/// The next `execv`.
pub fn execv(path: *const c_char, argv: Argv) -> c_int {
    call!(
        EXECV,
        fn(*const c_char, Argv) -> c_int,
        (path, argv),
        missing()
    )
}
/// The next `execvp`.
pub fn execvp(file: *const c_char, argv: Argv) -> c_int {
    call!(
        EXECVP,
        fn(*const c_char, Argv) -> c_int,
        (file, argv),
        missing()
    )
}
/// The next `execvpe`.
pub fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    call!(
        EXECVPE,
        fn(*const c_char, Argv, Argv) -> c_int,
        (file, argv, envp),
        missing()
    )
}
/// The next `fexecve`.
pub fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    call!(
        FEXECVE,
        fn(c_int, Argv, Argv) -> c_int,
        (fd, argv, envp),
        missing()
    )
}

/// The next `execveat`.
pub fn execveat(dirfd: c_int, path: *const c_char, argv: Argv, envp: Argv, flags: c_int) -> c_int {
    call!(
        EXECVEAT,
        fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int,
        (dirfd, path, argv, envp, flags),
        missing()
    )
}

/// The arguments of glibc's `syscall`: the number and six words, as many as any system call takes.
pub type SyscallArgs = [std::ffi::c_long; 6];

/// The next `syscall`.
pub fn syscall(n: std::ffi::c_long, a: SyscallArgs) -> std::ffi::c_long {
    type C = std::ffi::c_long;
    call!(
        SYSCALL,
        fn(C, C, C, C, C, C, C) -> C,
        (n, a[0], a[1], a[2], a[3], a[4], a[5]),
        missing() as C
    )
}

/// The child function glibc's `clone` runs.
pub type CloneFn = extern "C" fn(*mut c_void) -> c_int;

/// The next `clone`, with its three optional arguments always passed (it reads them only when the
/// flags ask for them).
pub fn clone(
    f: CloneFn,
    stack: *mut c_void,
    flags: c_int,
    arg: *mut c_void,
    tail: [*mut c_void; 3],
) -> c_int {
    type P = *mut c_void;
    call!(
        CLONE,
        fn(CloneFn, P, c_int, P, P, P, P) -> c_int,
        (f, stack, flags, arg, tail[0], tail[1], tail[2]),
        missing()
    )
}

/// The next `dlclose`.
pub fn dlclose(handle: *mut c_void) -> c_int {
    call!(DLCLOSE, fn(*mut c_void) -> c_int, (handle), missing())
}

/// The next `_exit`; never returns.
pub fn underscore_exit(status: c_int) -> ! {
    if let Some(a) = UNDERSCORE_EXIT.get() {
        // SAFETY: resolved by dlsym for "_exit", which takes an int and does not return.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> !>(a)(status) }
    }
    // The shim exports `syscall` itself: glibc's, not ours, ends the process.
    syscall(
        libc::SYS_exit_group,
        [status as std::ffi::c_long, 0, 0, 0, 0, 0],
    );
    // SAFETY: exit_group does not return; if even glibc's `syscall` was not found, abort is the
    // only way left to end a process that asked to end.
    unsafe { libc::abort() }
}

/// The next `_Exit`; never returns.
pub fn underscore_capital_exit(status: c_int) -> ! {
    if let Some(a) = UNDERSCORE_CAPITAL_EXIT.get() {
        // SAFETY: resolved by dlsym for "_Exit", which takes an int and does not return.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> !>(a)(status) }
    }
    underscore_exit(status)
}
