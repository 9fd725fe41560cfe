//! The next exec family, `dlclose`, `_exit` and `_Exit`.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use super::*;

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
    // SAFETY: exit_group ends the process; nothing of ours runs after it.
    unsafe { libc::syscall(libc::SYS_exit_group, status) };
    unreachable!("exit_group returned")
}

/// The next `_Exit`; never returns.
pub fn underscore_capital_exit(status: c_int) -> ! {
    if let Some(a) = UNDERSCORE_CAPITAL_EXIT.get() {
        // SAFETY: resolved by dlsym for "_Exit", which takes an int and does not return.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> !>(a)(status) }
    }
    underscore_exit(status)
}
