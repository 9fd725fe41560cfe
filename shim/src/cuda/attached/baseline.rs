//! The device memory already in use when the shim attached: the starting point that the calls seen
//! after attach add to. Each GPU whose primary context the process has made (what the CUDA runtime
//! and PyTorch use) is asked `cuMemGetInfo` inside that context, pushed on this thread for the call
//! and popped again; NVML adds what the driver counts as this process's on each GPU. A GPU without
//! an active primary context is not asked: retaining one would create a context (hundreds of MiB of
//! device memory) the program never made.
//!
//! Called once, on the attach's own thread of the shim, before CUPTI subscribes (so these calls are
//! not reported as the program's).
//!
//! # Safety
//! The driver functions come from `DriverFn` (the loaded driver's own exports) and are called with
//! their `cuda.h` signatures, with pointers to locals.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_uint, c_void};

use memshim_trace::DeviceAtAttach;

use crate::cuda::driver::DriverFn;

type Ctx = *mut c_void;

static DEVICE_COUNT: DriverFn = DriverFn::new(c"cuDeviceGetCount");
static DEVICE_GET: DriverFn = DriverFn::new(c"cuDeviceGet");
static TOTAL_MEM: DriverFn = DriverFn::new(c"cuDeviceTotalMem_v2");
static PRIMARY_STATE: DriverFn = DriverFn::new(c"cuDevicePrimaryCtxGetState");
static PRIMARY_RETAIN: DriverFn = DriverFn::new(c"cuDevicePrimaryCtxRetain");
static PRIMARY_RELEASE: DriverFn = DriverFn::new(c"cuDevicePrimaryCtxRelease_v2");
static CTX_PUSH: DriverFn = DriverFn::new(c"cuCtxPushCurrent_v2");
static CTX_POP: DriverFn = DriverFn::new(c"cuCtxPopCurrent_v2");
static MEM_GET_INFO: DriverFn = DriverFn::new(c"cuMemGetInfo_v2");

/// Most GPUs asked about.
const MAX_DEVICES: c_int = 64;

/// Every GPU's memory now, as far as the driver (and NVML) can say.
pub fn read(pid: u32) -> Vec<DeviceAtAttach> {
    type CountFn = unsafe extern "C" fn(*mut c_int) -> i32;
    let mut n: c_int = 0;
    // SAFETY: cuDeviceGetCount's signature; a writable out-pointer.
    let counted =
        unsafe { DEVICE_COUNT.function::<CountFn>() }.is_some_and(|f| unsafe { f(&mut n) } == 0);
    if !counted {
        return Vec::new();
    }
    let nvml = crate::probes::nvml::Nvml::start(pid).map(|n| n.sample());
    (0..n.clamp(0, MAX_DEVICES))
        .map(|ordinal| {
            let (used_bytes, total_bytes) = device(ordinal).unwrap_or((0, 0));
            let process_bytes = nvml
                .as_ref()
                .and_then(|s| s.iter().find(|g| g.index == ordinal as u32))
                .and_then(|g| g.process_bytes);
            DeviceAtAttach {
                device: ordinal,
                used_bytes,
                total_bytes,
                process_bytes,
            }
        })
        .collect()
}

/// (bytes in use, total bytes) of the GPU `ordinal`; in use is 0 when it has no active primary
/// context to ask in.
fn device(ordinal: c_int) -> Option<(u64, u64)> {
    type GetFn = unsafe extern "C" fn(*mut c_int, c_int) -> i32;
    type TotalFn = unsafe extern "C" fn(*mut usize, c_int) -> i32;
    type StateFn = unsafe extern "C" fn(c_int, *mut c_uint, *mut c_int) -> i32;
    type RetainFn = unsafe extern "C" fn(*mut Ctx, c_int) -> i32;
    type ReleaseFn = unsafe extern "C" fn(c_int) -> i32;
    type PushFn = unsafe extern "C" fn(Ctx) -> i32;
    type PopFn = unsafe extern "C" fn(*mut Ctx) -> i32;
    type InfoFn = unsafe extern "C" fn(*mut usize, *mut usize) -> i32;
    // SAFETY: each type is the signature of the driver export it is read from.
    let (get, total_of, state, retain, release, push, pop, info) = unsafe {
        (
            DEVICE_GET.function::<GetFn>()?,
            TOTAL_MEM.function::<TotalFn>()?,
            PRIMARY_STATE.function::<StateFn>(),
            PRIMARY_RETAIN.function::<RetainFn>(),
            PRIMARY_RELEASE.function::<ReleaseFn>(),
            CTX_PUSH.function::<PushFn>(),
            CTX_POP.function::<PopFn>(),
            MEM_GET_INFO.function::<InfoFn>(),
        )
    };
    let mut dev: c_int = 0;
    let mut total: usize = 0;
    // SAFETY: writable out-pointers; `dev` is the handle the driver gave.
    if unsafe { get(&mut dev, ordinal) } != 0 || unsafe { total_of(&mut total, dev) } != 0 {
        return None;
    }
    let (Some(state), Some(retain), Some(release), Some(push), Some(pop), Some(info)) =
        (state, retain, release, push, pop, info)
    else {
        return Some((0, total as u64));
    };
    let (mut flags, mut active): (c_uint, c_int) = (0, 0);
    // SAFETY: writable out-pointers.
    if unsafe { state(dev, &mut flags, &mut active) } != 0 || active == 0 {
        return Some((0, total as u64));
    }
    let mut ctx: Ctx = std::ptr::null_mut();
    // SAFETY: the context is active, so retaining it creates nothing; it is released below.
    if unsafe { retain(&mut ctx, dev) } != 0 {
        return Some((0, total as u64));
    }
    let (mut free, mut all): (usize, usize) = (0, 0);
    let mut popped: Ctx = std::ptr::null_mut();
    // SAFETY: the retained context is pushed on this thread (which has none of its own), asked,
    // popped and released again.
    let asked = unsafe {
        let ok = push(ctx) == 0;
        let asked = ok && info(&mut free, &mut all) == 0;
        if ok {
            pop(&mut popped);
        }
        release(dev);
        asked
    };
    Some(if asked {
        ((all.saturating_sub(free)) as u64, all as u64)
    } else {
        (0, total as u64)
    })
}
