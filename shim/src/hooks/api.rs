//! The small C API a traced program may call (the `memshim` Python package and its pytest plugin
//! do, through ctypes): is it being traced, how long since its trace began, put what was recorded
//! on disk now, where the trace is. A program finds these with `dlsym(RTLD_DEFAULT, ...)`; without
//! the shim they are simply absent, so calling code checks for them first.
//!
//! The functions never block for longer than the caller allows, take no lock, allocate nothing, and
//! answer "not traced" rather than fail.
//!
//! # Safety
//! Each function is `extern "C"` with the documented signature; `memshim_trace_path` writes at most
//! `len` bytes to `buf`, which the caller owns. Every body runs under `catch_unwind`.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::panic::catch_unwind;
use std::time::Duration;

use crate::channel;
use crate::sys::clock;

/// The shim's version, as a NUL-terminated string that lives as long as the process.
#[no_mangle]
pub extern "C" fn memshim_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// 1 when this process is being traced now (its own trace is open), else 0.
#[no_mangle]
pub extern "C" fn memshim_active() -> c_int {
    catch_unwind(|| c_int::from(channel::trace().is_some())).unwrap_or(0)
}

/// Nanoseconds since this process's trace began (the times `memshim report --since/--until` take,
/// in seconds); 0 when not traced.
#[no_mangle]
pub extern "C" fn memshim_elapsed_ns() -> u64 {
    catch_unwind(|| {
        channel::trace().map_or(0, |t| {
            clock::monotonic_ns().saturating_sub(t.clock_start_ns)
        })
    })
    .unwrap_or(0)
}

/// Puts every event recorded so far on disk, waiting at most `timeout_ms`; 0 when done, -1 when
/// not traced or the time ran out.
#[no_mangle]
pub extern "C" fn memshim_flush(timeout_ms: u32) -> c_int {
    catch_unwind(|| {
        if channel::flush_now(Duration::from_millis(u64::from(timeout_ms))) {
            0
        } else {
            -1
        }
    })
    .unwrap_or(-1)
}

/// Copies the path of this process's trace, NUL-terminated, into `buf` (of `len` bytes); returns
/// the path's length, or -1 when not traced or `buf` is too small (nothing is written then).
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn memshim_trace_path(buf: *mut c_char, len: usize) -> isize {
    let Some(trace) = catch_unwind(channel::trace).ok().flatten() else {
        return -1;
    };
    let bytes = trace.path.as_os_str().as_bytes();
    if buf.is_null() || bytes.len() >= len {
        return -1;
    }
    // SAFETY: the caller gave `len` writable bytes at `buf`, and bytes.len() + 1 <= len.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    bytes.len() as isize
}
