//! GPU copy ceilings through the CUDA driver API, loaded at run time (`libcuda.so.1`), so `memshim`
//! needs no CUDA to build and runs where there is none.
//!
//! # Safety
//! Every driver function is looked up by its exported name in the library `dlopen` returned, which
//! stays loaded for the process's life, and is called with that export's C signature. Buffers passed
//! to copies were allocated by the driver with at least the size copied.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::time::Instant;

use anyhow::{bail, Result};

use super::ceilings::GpuCeilings;

type CuResult = c_int;
type DevPtr = u64;

struct Driver {
    handle: *mut c_void,
}

impl Driver {
    fn load() -> Option<Driver> {
        // SAFETY: a NUL-terminated name; dlopen has no other precondition.
        let handle =
            unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        (!handle.is_null()).then_some(Driver { handle })
    }

    fn sym(&self, name: &CStr) -> Result<usize> {
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if p.is_null() {
            bail!("the CUDA driver has no {}", name.to_string_lossy());
        }
        Ok(p as usize)
    }
}

macro_rules! call {
    ($drv:expr, $name:literal, fn($($t:ty),*), ($($a:expr),*)) => {{
        let f = $drv.sym($name)?;
        // SAFETY: see the module note: `f` is the export `$name`, whose signature this is.
        let r = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($t),*) -> CuResult>(f)($($a),*) };
        if r != 0 {
            bail!("{} failed with CUresult {r}", $name.to_string_lossy());
        }
    }};
}

/// Ceilings of every GPU, or an empty list when there is no driver or no device.
pub fn measure(bytes: usize, reps: usize) -> Result<Vec<GpuCeilings>> {
    let Some(drv) = Driver::load() else {
        return Ok(Vec::new());
    };
    let init = drv.sym(c"cuInit")?;
    // SAFETY: cuInit(unsigned int).
    if unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_uint) -> CuResult>(init)(0) }
        != 0
    {
        return Ok(Vec::new());
    }
    let mut count: c_int = 0;
    call!(drv, c"cuDeviceGetCount", fn(*mut c_int), (&mut count));
    (0..count).map(|i| device(&drv, i, bytes, reps)).collect()
}

fn device(drv: &Driver, index: c_int, bytes: usize, reps: usize) -> Result<GpuCeilings> {
    let mut dev: c_int = 0;
    call!(
        drv,
        c"cuDeviceGet",
        fn(*mut c_int, c_int),
        (&mut dev, index)
    );
    let mut name = [0 as c_char; 256];
    call!(
        drv,
        c"cuDeviceGetName",
        fn(*mut c_char, c_int, c_int),
        (name.as_mut_ptr(), 256, dev)
    );
    // SAFETY: the driver wrote a NUL-terminated name into the buffer.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut ctx: *mut c_void = std::ptr::null_mut();
    call!(
        drv,
        c"cuDevicePrimaryCtxRetain",
        fn(*mut *mut c_void, c_int),
        (&mut ctx, dev)
    );
    call!(drv, c"cuCtxSetCurrent", fn(*mut c_void), (ctx));
    let (mut d1, mut d2): (DevPtr, DevPtr) = (0, 0);
    call!(
        drv,
        c"cuMemAlloc_v2",
        fn(*mut DevPtr, usize),
        (&mut d1, bytes)
    );
    call!(
        drv,
        c"cuMemAlloc_v2",
        fn(*mut DevPtr, usize),
        (&mut d2, bytes)
    );
    let mut pinned: *mut c_void = std::ptr::null_mut();
    call!(
        drv,
        c"cuMemHostAlloc",
        fn(*mut *mut c_void, usize, c_uint),
        (&mut pinned, bytes, 0)
    );
    let mut pageable = vec![1u8; bytes];
    let pg = pageable.as_mut_ptr() as *mut c_void;
    let best = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        f()?; // warm-up
        let mut best = f64::INFINITY;
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            f()?;
            call!(drv, c"cuCtxSynchronize", fn(), ());
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(bytes as f64 / best / 1e9)
    };
    let htod = |src: *const c_void| -> Result<()> {
        call!(
            drv,
            c"cuMemcpyHtoD_v2",
            fn(DevPtr, *const c_void, usize),
            (d1, src, bytes)
        );
        Ok(())
    };
    let dtoh = |dst: *mut c_void| -> Result<()> {
        call!(
            drv,
            c"cuMemcpyDtoH_v2",
            fn(*mut c_void, DevPtr, usize),
            (dst, d1, bytes)
        );
        Ok(())
    };
    let out = GpuCeilings {
        index,
        name,
        htod_pageable_gbps: best(&mut || htod(pg))?,
        htod_pinned_gbps: best(&mut || htod(pinned))?,
        dtoh_pageable_gbps: best(&mut || dtoh(pg))?,
        dtoh_pinned_gbps: best(&mut || dtoh(pinned))?,
        // A device-to-device copy reads and writes every byte.
        dtod_gbps: 2.0
            * best(&mut || {
                call!(
                    drv,
                    c"cuMemcpyDtoD_v2",
                    fn(DevPtr, DevPtr, usize),
                    (d2, d1, bytes)
                );
                Ok(())
            })?,
    };
    call!(drv, c"cuMemFreeHost", fn(*mut c_void), (pinned));
    call!(drv, c"cuMemFree_v2", fn(DevPtr), (d1));
    call!(drv, c"cuMemFree_v2", fn(DevPtr), (d2));
    drop(pageable);
    Ok(out)
}
