//! The system calls `memshim attach` drives another process's thread with: seize, interrupt, wait,
//! registers (general and the extended FPU/vector state), words of its memory, continue, detach.
//! x86-64 Linux only. Thin wrappers that turn each call's failure into an `io::Error`; what to do
//! with a thread is `inject`'s.
//!
//! # Safety
//! Every block is one `ptrace` or `waitpid` call with a thread id and arguments whose validity the
//! kernel checks itself (a wrong thread or address is an error, never undefined behaviour here):
//! register buffers are `user_regs_struct` values or byte vectors whose length the `iovec` states,
//! and `waitpid` writes one `c_int`. No memory of this process is handed to the kernel beyond those.
#![allow(unsafe_code)]

use std::io;

/// General registers, as `PTRACE_GETREGS` reads them.
pub type Regs = libc::user_regs_struct;

const NT_X86_XSTATE: libc::c_int = 0x202;
/// Room for the largest XSAVE area current CPUs have (AMX tiles included).
const XSTATE_MAX: usize = 16 << 10;

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Traces thread `tid` without stopping it (`PTRACE_SEIZE`).
pub fn seize(tid: i32) -> io::Result<()> {
    // SAFETY: see the module overview; addr and data are unused (no options).
    check(unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0usize, 0usize) }).map(drop)
}

/// Asks the seized thread to stop (`PTRACE_INTERRUPT`); the stop is reported by [`wait`].
pub fn interrupt(tid: i32) -> io::Result<()> {
    // SAFETY: see the module overview.
    check(unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0usize, 0usize) }).map(drop)
}

/// Resumes the stopped thread, delivering `signal` (0 for none).
pub fn cont(tid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: see the module overview.
    check(unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, signal as usize) }).map(drop)
}

/// Stops tracing the thread and lets it run on.
pub fn detach(tid: i32) -> io::Result<()> {
    // SAFETY: see the module overview.
    check(unsafe { libc::ptrace(libc::PTRACE_DETACH, tid, 0usize, 0usize) }).map(drop)
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Stopped by [`interrupt`] or in a group stop (`PTRACE_EVENT_STOP`), with the stop's signal.
    Event(i32),
    /// Stopped as a signal was about to be delivered to it.
    Signal(i32),
    /// The thread (or the whole process) is gone.
    Gone,
}

/// Waits for the next change of the traced thread `tid`.
pub fn wait(tid: i32) -> io::Result<Stop> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: see the module overview; `status` is a valid c_int to write.
        let r = unsafe { libc::waitpid(tid, &mut status, libc::__WALL) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if e.raw_os_error() == Some(libc::ECHILD) {
                return Ok(Stop::Gone);
            }
            return Err(e);
        }
        break;
    }
    if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
        return Ok(Stop::Gone);
    }
    let sig = libc::WSTOPSIG(status);
    if status >> 16 == libc::PTRACE_EVENT_STOP {
        Ok(Stop::Event(sig))
    } else {
        Ok(Stop::Signal(sig))
    }
}

/// The stopped thread's general registers.
pub fn regs(tid: i32) -> io::Result<Regs> {
    // SAFETY: an all-zero user_regs_struct is a valid value (plain integers).
    let mut r: Regs = unsafe { std::mem::zeroed() };
    // SAFETY: see the module overview; `r` is a user_regs_struct the kernel fills.
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0usize, &mut r as *mut Regs) })?;
    Ok(r)
}

/// Sets the stopped thread's general registers.
pub fn set_regs(tid: i32, r: &Regs) -> io::Result<()> {
    // SAFETY: see the module overview; the kernel only reads `r`.
    check(unsafe { libc::ptrace(libc::PTRACE_SETREGS, tid, 0usize, r as *const Regs) }).map(drop)
}

/// The stopped thread's extended state (x87, SSE, AVX and beyond: the XSAVE area).
pub fn xstate(tid: i32) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; XSTATE_MAX];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: see the module overview; the kernel writes at most iov_len bytes into `buf` and
    // sets iov_len to what it wrote.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGSET,
            tid,
            NT_X86_XSTATE as usize,
            &mut iov as *mut libc::iovec,
        )
    })?;
    buf.truncate(iov.iov_len);
    Ok(buf)
}

/// Puts back an extended state read by [`xstate`].
pub fn set_xstate(tid: i32, state: &[u8]) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: state.as_ptr() as *mut libc::c_void,
        iov_len: state.len(),
    };
    // SAFETY: see the module overview; the kernel reads iov_len bytes of `state`.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGSET,
            tid,
            NT_X86_XSTATE as usize,
            &mut iov as *mut libc::iovec,
        )
    })
    .map(drop)
}

/// The word at `addr` in the stopped thread's memory.
pub fn peek(tid: i32, addr: u64) -> io::Result<u64> {
    // PEEKDATA returns the word itself, so -1 is an error only when errno says so.
    // SAFETY: errno is this thread's; setting it has no other effect.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: see the module overview.
    let v = unsafe { libc::ptrace(libc::PTRACE_PEEKDATA, tid, addr as usize, 0usize) };
    let e = io::Error::last_os_error();
    if v == -1 && e.raw_os_error() != Some(0) {
        return Err(e);
    }
    Ok(v as u64)
}

/// Writes the word `value` at `addr` in the stopped thread's memory.
pub fn poke(tid: i32, addr: u64, value: u64) -> io::Result<()> {
    // SAFETY: see the module overview.
    check(unsafe { libc::ptrace(libc::PTRACE_POKEDATA, tid, addr as usize, value as usize) })
        .map(drop)
}
