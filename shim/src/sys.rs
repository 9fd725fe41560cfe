//! Small, safe wrappers around the system calls the shim makes outside its hooks.
//!
//! # Safety
//! Every block passes the kernel or libc valid, NUL-terminated strings and buffers it owns, and reads
//! back only what the call reported writing.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// `getenv` without allocation beyond the returned copy.
pub fn getenv(name: &str) -> Option<String> {
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is NUL-terminated; getenv returns null or a pointer into the environment.
    let p = unsafe { libc::getenv(c.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The process id, from the kernel (not cached, so it is right in fork and vfork children).
pub fn getpid() -> u32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() as u32 }
}

/// The parent process id.
pub fn getppid() -> u32 {
    // SAFETY: getppid has no preconditions.
    unsafe { libc::getppid() as u32 }
}

/// The host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

/// Creates `path` for writing with mode 0600, refusing to follow or replace anything already there
/// (`O_EXCL` fails on an existing file or planted symlink, `O_NOFOLLOW` on a symlink).
pub fn create_exclusive(path: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the flags and mode are plain integers.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Writes a whole message to stderr without allocating or locking (stderr may be in use by the host).
pub fn write_stderr(msg: &[u8]) {
    let mut rest = msg;
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid buffer of the length passed.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// Blocks every signal in the calling thread and returns the previous mask.
pub fn block_all_signals() -> libc::sigset_t {
    // SAFETY: both sets are valid, owned sigset_t values; sigfillset initialises `all`.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Restores a signal mask saved by [`block_all_signals`].
pub fn restore_signals(old: &libc::sigset_t) {
    // SAFETY: `old` is a mask previously returned by pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

/// Reads this thread's errno.
#[inline]
pub fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

/// Sets this thread's errno.
#[inline]
pub fn set_errno(e: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e };
}

/// A file descriptor read with plain system calls (no `FILE`, no allocation), closed on drop.
pub struct RawFile(libc::c_int);

impl RawFile {
    /// Opens `path` for reading, close-on-exec.
    pub fn open_read(path: &CStr) -> Option<RawFile> {
        // SAFETY: `path` is NUL-terminated; the flags are plain integers.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        (fd >= 0).then_some(RawFile(fd))
    }

    /// Reads into `buf`, retrying on EINTR; `Some(0)` at the end of the file.
    pub fn read(&self, buf: &mut [u8]) -> Option<usize> {
        loop {
            // SAFETY: `buf` is writable for its whole length, which is passed.
            let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Some(n as usize);
            }
            if errno() != libc::EINTR {
                return None;
            }
        }
    }
}

impl Drop for RawFile {
    fn drop(&mut self) {
        // SAFETY: the descriptor was opened by `open_read` and is closed once, here.
        unsafe { libc::close(self.0) };
    }
}

/// The soft `RLIMIT_STACK` in bytes, `None` when unlimited.
pub fn stack_rlimit() -> Option<usize> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable rlimit.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as usize)
}

/// Reads a whole small file under /proc.
pub fn read_proc(path: &str) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Registers the handler that runs in the child after fork.
pub fn atfork_child(child: extern "C" fn()) {
    // SAFETY: the handler is a plain extern "C" function that lives as long as the process.
    unsafe { libc::pthread_atfork(None, None, Some(child)) };
}

/// Reads a clock in nanoseconds.
#[inline]
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clocks used always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The kernel id of the calling thread.
pub fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() as u32 }
}
