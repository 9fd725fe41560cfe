//! Driver functions the shim calls for itself (never wrapped, never handed to the program): looked up
//! once, lazily, in the libcuda the program already loaded. Nothing here loads a library.
//!
//! # Safety
//! `addr` holds 0 (not looked up yet), 1 (not available) or the address `dlsym` gave for `name` in
//! the loaded driver; callers transmute it to that export's documented C signature.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sys::real;

const UNRESOLVED: usize = 0;
const UNAVAILABLE: usize = 1;

/// One driver export, looked up on first use.
pub struct DriverFn {
    name: &'static CStr,
    addr: AtomicUsize,
}

impl DriverFn {
    pub const fn new(name: &'static CStr) -> DriverFn {
        DriverFn {
            name,
            addr: AtomicUsize::new(UNRESOLVED),
        }
    }

    /// The export's address, or `None` when no loaded driver has it. Racing first callers both look
    /// it up and store the same answer.
    pub fn get(&self) -> Option<usize> {
        let mut a = self.addr.load(Ordering::Acquire);
        if a == UNRESOLVED {
            a = lookup(self.name).unwrap_or(UNAVAILABLE);
            self.addr.store(a, Ordering::Release);
        }
        (a != UNAVAILABLE).then_some(a)
    }

    /// The export as a function pointer of type `F`.
    ///
    /// # Safety
    /// `F` must be a function pointer type with the export's C signature.
    pub unsafe fn function<F: Copy>(&self) -> Option<F> {
        let a = self.get()?;
        if std::mem::size_of::<F>() != std::mem::size_of::<usize>() {
            return None;
        }
        // SAFETY: same size, and the caller vouches that the export has type `F`.
        Some(unsafe { std::mem::transmute_copy::<usize, F>(&a) })
    }
}

/// The driver's own export `name`: after the shim in the global scope, else in a `libcuda.so.1`
/// already loaded out of it.
pub fn lookup(name: &CStr) -> Option<usize> {
    let mut p = real::dlsym(libc::RTLD_NEXT, name);
    if p.is_null() {
        // libcudart loads libcuda with RTLD_LOCAL: ask it by handle, without loading anything new.
        // RTLD_NOLOAD never loads a library.
        let h: *mut c_void = real::dlopen(c"libcuda.so.1", libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if !h.is_null() {
            p = real::dlsym(h, name);
        }
    }
    (!p.is_null()).then_some(p as usize)
}

static CTX_GET_DEVICE: DriverFn = DriverFn::new(c"cuCtxGetDevice");

/// The device of the calling thread's current context, -1 when there is none or it cannot be asked.
pub fn current_device() -> i32 {
    type CtxGetDevice = unsafe extern "C" fn(*mut libc::c_int) -> i32;
    // SAFETY: cuCtxGetDevice's C signature.
    let Some(f) = (unsafe { CTX_GET_DEVICE.function::<CtxGetDevice>() }) else {
        return -1;
    };
    let mut dev: libc::c_int = -1;
    // SAFETY: `dev` is writable.
    let r = unsafe { f(&mut dev) };
    if r == 0 {
        dev
    } else {
        -1
    }
}
