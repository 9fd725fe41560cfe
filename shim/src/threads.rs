//! The shim's helper threads (writer, sampler), started with `pthread_create` directly so that the
//! very first thing they run marks them untraced: std's spawn machinery allocates in the new thread
//! before a closure would get the chance.
//!
//! # Safety
//! The start routine receives the only pointer to a boxed closure, produced by `Box::into_raw` here,
//! and takes ownership back exactly once; on failure to create the thread the box is reclaimed here.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use crossbeam_channel::{Sender, TrySendError};

use crate::msg::Msg;

type Job = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn start(arg: *mut c_void) -> *mut c_void {
    crate::guard::mark_thread_untraced();
    // SAFETY: `arg` is the Box<Job> leaked by `spawn`, handed to this thread alone.
    let job = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic must not take the host down with it; the channel's disconnection tells producers.
    let _ = catch_unwind(AssertUnwindSafe(job));
    std::ptr::null_mut()
}

/// Starts a detached, untraced thread named `name` (at most 15 bytes) running `job`.
pub fn spawn(name: &CStr, job: impl FnOnce() + Send + 'static) -> io::Result<()> {
    let boxed: Box<Job> = Box::new(Box::new(job));
    let arg = Box::into_raw(boxed) as *mut c_void;
    let mut tid: libc::pthread_t = 0;
    // SAFETY: valid out-pointer, default attributes, a start routine of the right signature and an
    // argument it owns from here on.
    let rc = unsafe { libc::pthread_create(&mut tid, std::ptr::null(), start, arg) };
    if rc != 0 {
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

/// Sends from one of the shim's helper threads without ever parking on the channel: crossbeam parks
/// a blocked sender through a thread-local whose destructor glibc registers under the loader's
/// lock, and a program thread that holds that lock (loading a library) may be waiting on what this
/// thread does. While the channel is full it naps and tries again; false once the writer is gone.
pub fn send_unparked(tx: &Sender<Msg>, mut msg: Msg) -> bool {
    loop {
        match tx.try_send(msg) {
            Ok(()) => return true,
            Err(TrySendError::Full(m)) => {
                msg = m;
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(TrySendError::Disconnected(_)) => return false,
        }
    }
}
