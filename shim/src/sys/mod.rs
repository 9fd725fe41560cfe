//! Small, safe wrappers around the system calls the shim makes outside its hooks.
//!
//! # Safety
//! Every block passes the kernel or libc valid, NUL-terminated strings and buffers it owns, and reads
//! back only what the call reported writing.
#![allow(unsafe_code)]
pub(crate) mod bootstrap;
pub(crate) mod clock;
pub(crate) mod doorbell;
pub(crate) mod file_room;
pub(crate) mod global_alloc;
pub(crate) mod handed_back;
pub(crate) mod leaked;
pub(crate) mod own_heap;
pub(crate) mod own_memory;
pub(crate) mod owned_fds;
pub(crate) mod prefetch;
pub(crate) mod proc_file;
pub(crate) mod queue;
pub(crate) mod real;
pub(crate) mod thread_words;
pub(crate) mod threads;

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A system call made with the `syscall` instruction itself: not through glibc's `syscall`, which
/// the shim hooks (its hook may start the shim, resolve symbols and allocate), nor through `mmap`
/// or `munmap`, which it hooks too. For the shim's own heap, which must never re-enter the shim.
/// Returns the kernel's result (a negative errno on failure).
///
/// # Safety
/// The caller passes arguments valid for system call `n`.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn raw_syscall(n: i64, a: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the x86-64 Linux system-call convention: number in rax, arguments in rdi, rsi, rdx,
    // r10, r8, r9; the kernel clobbers rcx and r11; no stack is used.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

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

/// The kernel's clock ticks per second (`/proc`'s times are in them).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(0) as u64
}

/// The page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

/// Creates `path` with mode 0600, refusing to follow or replace anything already there (`O_EXCL`
/// fails on an existing file or planted symlink, `O_NOFOLLOW` on a symlink). Open for reading too:
/// past a file-size limit the trace is stored through a mapping, which needs both (`file_room`).
pub fn create_exclusive(path: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the flags and mode are plain integers.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens an existing file for appending (and reading, as `create_exclusive`), never following a
/// symlink at its last component.
pub fn open_append(path: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the flags are plain integers.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_APPEND | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A resource limit, soft and hard; `None` when it cannot be read.
fn rlimit(which: libc::__rlimit_resource_t) -> Option<libc::rlimit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable rlimit.
    (unsafe { libc::getrlimit(which, &mut r) } == 0).then_some(r)
}

/// A soft limit, `None` when it cannot be read or is unlimited.
fn soft_limit(which: libc::__rlimit_resource_t) -> Option<u64> {
    rlimit(which)
        .map(|r| r.rlim_cur)
        .filter(|&n| n != libc::RLIM_INFINITY)
}

/// The soft `RLIMIT_FSIZE`, `None` when it cannot be read or is unlimited.
pub fn file_size_limit() -> Option<u64> {
    soft_limit(libc::RLIMIT_FSIZE)
}

/// The soft `RLIMIT_NOFILE`, `None` when it cannot be read or is unlimited.
pub fn nofile_limit() -> Option<u64> {
    soft_limit(libc::RLIMIT_NOFILE)
}

/// Moves a descriptor the shim keeps open to a high number (close-on-exec), out of the range a
/// program's own `open`s take and out of its way when it lowers `RLIMIT_NOFILE` later: a
/// descriptor above the limit stays valid, and the lowest free numbers stay the program's. Keeps
/// the original when no higher number can be had.
pub fn move_high(fd: OwnedFd) -> OwnedFd {
    use std::os::fd::AsRawFd;
    let floor = high_floor();
    if floor <= fd.as_raw_fd() {
        return fd;
    }
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new one or -1.
    let high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, floor) };
    if high < 0 {
        return fd;
    }
    // SAFETY: `high` was just made and is owned by nobody else; `fd` is closed by its drop.
    unsafe { OwnedFd::from_raw_fd(high) }
}

/// Runs `f` with every free descriptor below [`high_floor`] taken (by duplicates of `/dev/null`,
/// released after), so that whatever `f` opens lands high, out of the program's way; returns what
/// `f` returned and the lowest descriptor number that was free for it.
pub fn with_low_descriptors_taken<T>(f: impl FnOnce() -> T) -> (T, libc::c_int) {
    let floor = high_floor();
    let mut taken: Vec<OwnedFd> = Vec::new();
    // SAFETY: a NUL-terminated path and plain flags.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if null >= 0 {
        // SAFETY: just opened, owned by nobody else.
        taken.push(unsafe { OwnedFd::from_raw_fd(null) });
        let mut last = null;
        while last < floor - 1 {
            // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new one or -1.
            let d = unsafe { libc::fcntl(null, libc::F_DUPFD_CLOEXEC, 0) };
            if d < 0 {
                break;
            }
            // SAFETY: just made, owned by nobody else.
            taken.push(unsafe { OwnedFd::from_raw_fd(d) });
            last = d;
        }
    }
    let next = taken
        .iter()
        .map(std::os::fd::AsRawFd::as_raw_fd)
        .max()
        .map_or(0, |m| m + 1);
    let out = f();
    drop(taken);
    (out, next)
}

/// Where the descriptors the shim keeps are put: near the top of the usual 1024 (or of a lower
/// limit), never so high that the kernel grows a huge descriptor table.
pub fn high_floor() -> libc::c_int {
    let limit = nofile_limit().unwrap_or(1024);
    (limit.min(1024) as libc::c_int).saturating_sub(32).max(3)
}

/// Whether `fd` is open and is a pipe.
pub fn is_pipe(fd: libc::c_int) -> bool {
    // SAFETY: an all-zero stat is a valid out-buffer, written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is valid and writable; fstat on any number is safe (EBADF when not open).
    (unsafe { libc::fstat(fd, &mut st) } == 0) && st.st_mode & libc::S_IFMT == libc::S_IFIFO
}

/// The device and inode of an open descriptor, `None` when it is not open.
pub fn file_id(fd: libc::c_int) -> Option<(u64, u64)> {
    // SAFETY: an all-zero stat is a valid out-buffer, written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is valid and writable; fstat on any number is safe (EBADF when not open).
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// The device and inode of what `path` names itself (a symlink's own, not its target's).
pub fn path_id(path: &CStr) -> Option<(u64, u64)> {
    // SAFETY: an all-zero stat is a valid out-buffer, written by lstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is valid and writable.
    (unsafe { libc::lstat(path.as_ptr(), &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// Opens `path` read-only, close-on-exec.
pub fn open_read_only(path: &CStr) -> Option<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the flags are plain integers.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    // SAFETY: a descriptor just opened, owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads into `buf` from offset `off` of `fd` (one call: a `/proc` file gives its whole text).
pub fn pread(fd: libc::c_int, buf: &mut [u8], off: i64) -> Option<usize> {
    // SAFETY: `buf` is writable for its whole length, which is passed.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off) };
    (n >= 0).then_some(n as usize)
}

/// Writes all of `buf` to `fd`, retrying on EINTR and short writes.
pub fn write_all(fd: libc::c_int, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is a valid buffer of the length passed.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::WriteZero));
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Runs `f` with the soft `RLIMIT_NOFILE` and `RLIMIT_FSIZE` raised to the hard ones, then puts
/// them back: for the very end of a process that sits at its soft limits, when the shim needs one
/// descriptor, or a file longer than the program allowed its own, for a moment.
pub fn with_limits_raised<T>(f: impl FnOnce() -> T) -> T {
    let raise = |which| {
        let r = rlimit(which).filter(|r| r.rlim_cur < r.rlim_max)?;
        let up = libc::rlimit {
            rlim_cur: r.rlim_max,
            rlim_max: r.rlim_max,
        };
        // SAFETY: a valid rlimit value; raising a soft limit up to the hard one is allowed.
        unsafe { libc::setrlimit(which, &up) };
        Some((which, r))
    };
    let saved = [raise(libc::RLIMIT_NOFILE), raise(libc::RLIMIT_FSIZE)];
    let out = f();
    for (which, r) in saved.into_iter().flatten() {
        // SAFETY: as above; this puts back the value read before.
        unsafe { libc::setrlimit(which, &r) };
    }
    out
}

/// Cuts the file open at `fd` back to `len` bytes (a frame written in part), and puts the file
/// offset there, where the next write must go.
pub fn truncate(fd: libc::c_int, len: u64) -> io::Result<()> {
    // SAFETY: ftruncate and lseek on any descriptor are safe; an error leaves the file as it was.
    let r = unsafe { libc::ftruncate(fd, len as libc::off_t) };
    let err = (r != 0).then(io::Error::last_os_error);
    // SAFETY: as above.
    unsafe { libc::lseek(fd, len as libc::off_t, libc::SEEK_SET) };
    err.map_or(Ok(()), Err)
}

/// Keeps `len` bytes of disk allocated beyond `end` without changing the file's length, where the
/// file system can (best effort).
pub fn reserve_beyond_end(fd: libc::c_int, end: i64, len: i64) {
    // SAFETY: fallocate on any descriptor is safe; KEEP_SIZE leaves the length alone.
    unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, end, len) };
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

/// Blocks every signal in the calling thread but the faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE), and
/// returns the previous mask. A fault is the faulting thread's own: blocked, the kernel still
/// delivers it, but with its default action, past every handler, so the program's crash reporter
/// (Python's faulthandler, say) and the shim's own never see a crash in a shim thread.
pub fn block_signals_but_faults() -> libc::sigset_t {
    // SAFETY: both sets are valid, owned sigset_t values; sigfillset initialises `all`.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        for fault in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE] {
            libc::sigdelset(&mut all, fault);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Restores a signal mask saved by [`block_signals_but_faults`].
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

/// A file descriptor read with plain system calls (no `FILE`, no allocation), closed on drop. The
/// calls are raw system calls, not glibc's wrappers: those are cancellation points, and this runs
/// on program threads inside the shim.
pub struct RawFile(libc::c_int);

impl RawFile {
    /// Opens `path` for reading, close-on-exec.
    pub fn open_read(path: &CStr) -> Option<RawFile> {
        // SAFETY: `path` is NUL-terminated; the flags are plain integers.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        } as libc::c_int;
        (fd >= 0).then_some(RawFile(fd))
    }

    /// Reads into `buf`, retrying on EINTR; `Some(0)` at the end of the file.
    pub fn read(&self, buf: &mut [u8]) -> Option<usize> {
        loop {
            // SAFETY: `buf` is writable for its whole length, which is passed.
            let n = unsafe { libc::syscall(libc::SYS_read, self.0, buf.as_mut_ptr(), buf.len()) };
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
        unsafe { libc::syscall(libc::SYS_close, self.0) };
    }
}

/// The soft `RLIMIT_STACK` in bytes, `None` when unlimited.
pub fn stack_rlimit() -> Option<usize> {
    soft_limit(libc::RLIMIT_STACK).map(|n| n as usize)
}

/// Sleeps with the `nanosleep` system call: async-signal-safe, and, made directly rather than
/// through glibc's wrapper, not a cancellation point (a program thread cancelled while it waits in
/// the shim would be unwound through the shim's frames, which glibc's forced unwind cannot cross).
pub fn nap_signal_safe(d: std::time::Duration) {
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a valid timespec; a null remainder is allowed.
    unsafe { libc::syscall(libc::SYS_nanosleep, &ts as *const libc::timespec, 0usize) };
}

/// glibc's cancellation state values (`<pthread.h>`): not in the `libc` crate for Linux.
const PTHREAD_CANCEL_DISABLE: libc::c_int = 1;

extern "C" {
    fn pthread_setcancelstate(state: libc::c_int, old: *mut libc::c_int) -> libc::c_int;
}

/// Runs `f` with the calling thread's cancellation disabled, then gives the thread back the state it
/// had. For work on a program's thread inside a hook that calls code whose own calls are
/// cancellation points (libunwind tests each address by `read`ing it back through a pipe): a
/// `pthread_cancel` acted on there would unwind the thread through the shim's frames, whose panic
/// guard catches glibc's forced unwind, and glibc then aborts the process ("FATAL: exception not
/// rethrown"). A cancellation that arrives meanwhile stays pending until the program's next
/// cancellation point, as it would while the thread ran the real call.
#[inline]
pub fn without_cancellation<T>(f: impl FnOnce() -> T) -> T {
    let mut old: libc::c_int = 0;
    // SAFETY: `old` is a valid, writable c_int; the call only changes this thread's own state.
    let set = unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) } == 0;
    let out = f();
    if set && old != PTHREAD_CANCEL_DISABLE {
        // SAFETY: as above; a null old state is allowed.
        unsafe { pthread_setcancelstate(old, std::ptr::null_mut()) };
    }
    out
}

/// Whether the process runs in secure-execution mode (setuid, setgid, file capabilities).
pub fn secure_exec() -> bool {
    // SAFETY: getauxval has no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
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

/// Registers a handler that `quick_exit` runs.
pub fn at_quick_exit(f: extern "C" fn()) {
    extern "C" {
        fn at_quick_exit(f: extern "C" fn()) -> libc::c_int;
    }
    // SAFETY: glibc's at_quick_exit takes a plain function that lives as long as the process.
    unsafe { at_quick_exit(f) };
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

/// The CPU the calling thread runs on (`sched_getcpu`, a vDSO call), negative when unknown.
#[inline]
pub fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu has no preconditions (a vDSO call).
    unsafe { libc::sched_getcpu() }
}
