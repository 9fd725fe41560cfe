//! The shim's helper threads (writer, sampler), started with `pthread_create` directly so that the
//! very first thing they run marks them untraced: std's spawn machinery allocates in the new thread
//! before a closure would get the chance.
//!
//! # Safety
//! glibc's single-threaded flag is read through the address its loader gave for the symbol. The
//! start routine receives the only pointer to a boxed closure, produced by `Box::into_raw` here,
//! and takes ownership back exactly once; on failure to create the thread the box is reclaimed here.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::time::Duration;

use crate::record::msg::Msg;
use crate::sys::queue::Sender;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Each helper thread's stack: room for symbolizing at exit (DWARF parsing recurses) with a margin.
const STACK_BYTES: usize = 2 << 20;

/// The shim's helper threads alive in this process.
static LIVE: AtomicU32 = AtomicU32::new(0);

extern "C" fn start(arg: *mut c_void) -> *mut c_void {
    crate::record::guard::mark_thread_untraced();
    // SAFETY: `arg` is the Box<Job> leaked by `spawn`, handed to this thread alone.
    let job = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic must not take the host down with it; the channel's disconnection tells producers.
    let _ = catch_unwind(AssertUnwindSafe(job));
    LIVE.fetch_sub(1, Ordering::AcqRel);
    std::ptr::null_mut()
}

/// As `start`, for a thread that is the program's to the allocator (see [`spawn_inside`]).
extern "C" fn start_inside(arg: *mut c_void) -> *mut c_void {
    let inside = crate::record::guard::enter();
    // SAFETY: as in `start`.
    let job = unsafe { Box::from_raw(arg as *mut Job) };
    let _ = catch_unwind(AssertUnwindSafe(job));
    drop(inside);
    LIVE.fetch_sub(1, Ordering::AcqRel);
    std::ptr::null_mut()
}

/// glibc's `__libc_single_threaded` (2.32 and later), found at start; null when there is none.
static SINGLE_THREADED: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

/// Finds glibc's flag that says the process has never had a second thread (see
/// [`process_single_threaded`]).
pub fn find_single_threaded_flag() {
    let p = crate::sys::real::dlsym(libc::RTLD_DEFAULT, c"__libc_single_threaded");
    SINGLE_THREADED.store(p as *mut u8, Ordering::Release);
}

/// Whether the process has had only one thread since it started (or since the fork that made it),
/// as glibc's allocator sees it; `None` when the C library does not say.
pub fn process_single_threaded() -> Option<bool> {
    let p = SINGLE_THREADED.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is the address of glibc's one-byte `__libc_single_threaded`, which lives as long
    // as the C library; glibc writes it only to clear it, and a read of a byte is never torn.
    Some(unsafe { std::ptr::read_volatile(p) } != 0)
}

/// In a fork child: the parent's helper threads were not copied.
pub fn after_fork_in_child() {
    LIVE.store(0, Ordering::Relaxed);
}

/// The main thread's state letter and the process's thread count, from `/proc/self/stat`.
fn main_state_and_threads() -> Option<(u8, u32)> {
    static STAT: std::sync::Mutex<crate::sys::proc_file::ProcFile> =
        std::sync::Mutex::new(crate::sys::proc_file::ProcFile::new(c"/proc/self/stat"));
    let mut buf = [0u8; 1024];
    // The sampler reads it every period; a raw clone child's last thread once, at its end. Tried,
    // not waited on: a fork child's copy of the lock may have been taken at the fork.
    let n = STAT.try_lock().ok()?.read(&mut buf)?;
    let stat = &buf[..n];
    // The command name may hold anything, parentheses included: the fields start after the last ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let state = *fields.next()?.first()?;
    // num_threads is field 20 of the whole line; state was field 3.
    let threads = fields.nth(16)?;
    let threads = std::str::from_utf8(threads).ok()?.parse().ok()?;
    Some((state, threads))
}

/// True when every program thread has ended and only the shim's helpers keep the process alive:
/// the main thread is a zombie (it left with `pthread_exit`, or a raw `clone` child's function
/// returned) and no other thread is the program's. glibc ends such a process with `exit(0)` when its
/// last thread leaves, a count the helpers keep from reaching zero; and as they block every signal
/// but their own faults, nothing could be delivered to it either.
pub fn program_gone() -> bool {
    main_state_and_threads()
        .is_some_and(|(state, n)| state == b'Z' && n <= LIVE.load(Ordering::Acquire) + 1)
}

/// True when the calling thread is the program's only one.
pub fn caller_alone() -> bool {
    main_state_and_threads().is_some_and(|(_, n)| n <= LIVE.load(Ordering::Acquire) + 1)
}

/// Ends the process as glibc does when its last thread leaves: `exit(0)`, running the program's
/// exit handlers (and the shim's own, which close the trace).
pub fn exit_as_last_thread() -> ! {
    // SAFETY: exit may be called from any thread; the shim's threads hold no lock here.
    unsafe { libc::exit(0) }
}

/// Ends the process at once with `status`, as the kernel does when the last thread leaves.
pub fn exit_group(status: i32) -> ! {
    crate::sys::real::underscore_exit(status)
}

/// Starts a detached, untraced thread named `name` (at most 15 bytes) running `job`.
pub fn spawn(name: &CStr, job: impl FnOnce() + Send + 'static) -> io::Result<()> {
    spawn_with(name, Box::new(job), start)
}

/// Starts a detached thread named `name` running `job` inside the shim from its first instruction
/// (nothing it allocates is recorded), but a program thread to the allocators: what the C library
/// allocates for it comes from the C library's heap, not the shim's. For the work an attached shim
/// does in libraries that outlive the attach (CUPTI, PyTorch's allocator), whose blocks the C
/// library frees after detach, when the hooks are gone.
pub fn spawn_inside(name: &CStr, job: impl FnOnce() + Send + 'static) -> io::Result<()> {
    spawn_with(name, Box::new(job), start_inside)
}

fn spawn_with(
    name: &CStr,
    job: Job,
    routine: extern "C" fn(*mut c_void) -> *mut c_void,
) -> io::Result<()> {
    let boxed: Box<Job> = Box::new(job);
    let arg = Box::into_raw(boxed) as *mut c_void;
    let mut tid: libc::pthread_t = 0;
    LIVE.fetch_add(1, Ordering::AcqRel);
    // SAFETY: a zeroed pthread_attr_t is initialised by pthread_attr_init before use and destroyed
    // after; the thread is created with it, a start routine of the right signature and an argument
    // it owns from here on.
    let rc = unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        // The default (RLIMIT_STACK, often 8 MiB) would count against a program's RLIMIT_AS.
        libc::pthread_attr_setstacksize(&mut attr, STACK_BYTES);
        let rc = libc::pthread_create(&mut tid, &attr, routine, arg);
        libc::pthread_attr_destroy(&mut attr);
        rc
    };
    if rc != 0 {
        LIVE.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(arg as *mut Job) });
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: `tid` is a thread just created; detaching it once is valid, and the name is a
    // NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::pthread_setname_np(tid, name.as_ptr());
        libc::pthread_detach(tid);
    }
    Ok(())
}

/// Sends from one of the shim's helper threads without ever parking on the queue: a parked thread
/// needs a thread-local whose destructor glibc registers under the loader's lock, and a program
/// thread that holds that lock (loading a library) may be waiting on what this thread does. While
/// the queue is full it naps and tries again; false once the writer is gone.
pub fn send_unparked(tx: &Sender, msg: Msg) -> bool {
    tx.send(msg, || {
        std::thread::sleep(Duration::from_micros(200));
        true
    })
    .is_ok()
}
