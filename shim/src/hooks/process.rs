//! Process lifecycle: the exec family closes the trace before the image is replaced (and a failed
//! exec starts a new one); `_exit` and `_Exit` close it before the process ends without running
//! destructors. fork is handled by `pthread_atfork` (see `session`).
use std::ffi::{c_char, c_int};

use memshim_trace::EndReason;

use crate::{record::recorder, session, sys::real};

type Argv = *const *const c_char;

fn around_exec(exec: impl FnOnce() -> c_int) -> c_int {
    let closed = recorder::lifecycle(session::before_exec);
    let r = exec();
    // `lifecycle` keeps errno, so the caller still sees why the exec failed.
    recorder::lifecycle(|| session::after_failed_exec(closed));
    r
}

/// `execve`.
#[no_mangle]
pub extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    around_exec(|| real::execve(path, argv, envp))
}

/// `execv`.
#[no_mangle]
pub extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    around_exec(|| real::execv(path, argv))
}

/// `execvp`.
#[no_mangle]
pub extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    around_exec(|| real::execvp(file, argv))
}

/// `execvpe`.
#[no_mangle]
pub extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    around_exec(|| real::execvpe(file, argv, envp))
}

/// `execveat`.
#[no_mangle]
pub extern "C" fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    around_exec(|| real::execveat(dirfd, path, argv, envp, flags))
}

/// `fexecve`.
#[no_mangle]
pub extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    around_exec(|| real::fexecve(fd, argv, envp))
}

/// `dlclose`: the module map is recorded first, so a library loaded and unloaded between two
/// samples is still known, and its frames can be named. (`dlopen` is only watched, by a tail-jump
/// trampoline in `dlopen.rs`: glibc resolves a library's search path from its caller, which a
/// wrapper would change; the sampler sees new modules within 100 ms, and this hook catches any
/// that leave sooner.)
#[no_mangle]
pub extern "C" fn dlclose(handle: *mut std::ffi::c_void) -> c_int {
    recorder::lifecycle(session::record_modules);
    real::dlclose(handle)
}

/// `_exit`.
#[no_mangle]
pub extern "C" fn _exit(status: c_int) -> ! {
    recorder::lifecycle(|| session::finish(EndReason::QuickExit));
    real::underscore_exit(status)
}

/// `_Exit`.
#[no_mangle]
pub extern "C" fn _Exit(status: c_int) -> ! {
    recorder::lifecycle(|| session::finish(EndReason::QuickExit));
    real::underscore_capital_exit(status)
}
