//! The CUPTI subscriber: subscribes to the driver-API domain, enables the callbacks of the calls
//! `calls` knows, and receives them on the calling thread, inside the driver function, at its entry
//! and exit. Only one subscriber may exist in a process (CUDA 13's CUPTI may allow more when every
//! subscriber asks for it; `cuptiSubscribe` does not ask): when another tool holds CUPTI, the
//! subscription fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, and that is what the trace
//! says.
//!
//! # Safety
//! CUPTI's functions come from `cupti_lib` with the signatures of `cupti_callbacks.h`. The callback
//! is called by CUPTI with a `CUpti_CallbackData` for the driver-API domain, read through its C
//! layout below, valid for the call; its parameter struct goes to `calls::on_call` with its id.
//! The subscriber handle is CUPTI's, kept in one word, used only to unsubscribe once.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::calls;
use crate::cuda::cupti_lib::{self, CUPTI_SUCCESS};
use crate::record::guard;

/// `CUPTI_CB_DOMAIN_DRIVER_API`.
const DOMAIN_DRIVER_API: u32 = 1;
/// `CUPTI_API_EXIT` (entry is 0).
const API_EXIT: u32 = 1;

type Subscriber = *mut c_void;
type CallbackFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
type SubscribeFn = unsafe extern "C" fn(*mut Subscriber, CallbackFn, *mut c_void) -> i32;
type EnableCallbackFn = unsafe extern "C" fn(u32, Subscriber, u32, u32) -> i32;
type UnsubscribeFn = unsafe extern "C" fn(Subscriber) -> i32;
type GetVersionFn = unsafe extern "C" fn(*mut u32) -> i32;

/// `CUpti_CallbackData` (x86-64; every CUPTI since CUDA 4 lays it out so).
#[repr(C)]
struct CallbackData {
    site: u32,
    function_name: *const c_char,
    function_params: *const c_void,
    return_value: *const c_void,
    symbol_name: *const c_char,
    context: *mut c_void,
    context_uid: u32,
    correlation_data: *mut u64,
    correlation_id: u32,
}

static SUBSCRIBER: AtomicUsize = AtomicUsize::new(0);
static UNSUBSCRIBE: AtomicUsize = AtomicUsize::new(0);
/// Cleared before unsubscribing: a callback already on its way records nothing more.
static LIVE: AtomicBool = AtomicBool::new(false);
/// Set by `unsubscribe`: a subscription still being made undoes itself.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Subscribes (see the module note); returns what to say about it: the library and what it sees,
/// or precisely why it sees nothing.
pub fn subscribe(lib: Option<&str>) -> Result<String, String> {
    let cupti = cupti_lib::open(lib)?;
    // SAFETY: each type is the signature of the CUPTI export of that name.
    let (sub, enable, unsub, version) = unsafe {
        (
            cupti.required::<SubscribeFn>(c"cuptiSubscribe")?,
            cupti.required::<EnableCallbackFn>(c"cuptiEnableCallback")?,
            cupti.required::<UnsubscribeFn>(c"cuptiUnsubscribe")?,
            cupti.optional::<GetVersionFn>(c"cuptiGetVersion"),
        )
    };
    mark_driver_code();
    let mut api_version = 0u32;
    // SAFETY: a writable out-pointer.
    let known = version.is_some_and(|f| unsafe { f(&mut api_version) } == CUPTI_SUCCESS);
    let mut handle: Subscriber = std::ptr::null_mut();
    LIVE.store(true, Ordering::Release);
    // SAFETY: a writable out-pointer and a callback of CUPTI's signature that lives as long as the
    // process (the shim is never unloaded).
    let r = unsafe { sub(&mut handle, on_callback, std::ptr::null_mut()) };
    if r != CUPTI_SUCCESS {
        LIVE.store(false, Ordering::Release);
        let who = if r == MULTIPLE_SUBSCRIBERS {
            " (another tool holds CUPTI's callbacks: a profiler such as Nsight Systems, or PyTorch's profiler, in this process)"
        } else {
            ""
        };
        return Err(format!("{}{who}", cupti.failed("cuptiSubscribe", r)));
    }
    SUBSCRIBER.store(handle as usize, Ordering::Release);
    UNSUBSCRIBE.store(unsub as usize, Ordering::Release);
    if STOPPED.load(Ordering::Acquire) {
        unsubscribe();
        return Err("memshim detached before CUPTI's callbacks were enabled".to_string());
    }
    let mut refused: Vec<&'static str> = Vec::new();
    let mut enabled = 0;
    for id in calls::ids() {
        // SAFETY: the handle CUPTI just gave; a domain and one of its callback ids.
        if unsafe { enable(1, handle, DOMAIN_DRIVER_API, id) } == CUPTI_SUCCESS {
            enabled += 1;
        } else if !refused.contains(&calls::name(id)) {
            refused.push(calls::name(id));
        }
    }
    if enabled == 0 {
        unsubscribe();
        return Err(format!(
            "{} enabled none of the driver's memory callbacks (a CUPTI too old for this driver?)",
            cupti.path
        ));
    }
    let mut said = cupti.path.clone();
    if known {
        said.push_str(&format!(" (CUPTI API version {api_version})"));
    }
    if !refused.is_empty() {
        said.push_str(&format!(
            "; this CUPTI is too old to report {}",
            refused.join(", ")
        ));
    }
    Ok(said)
}

/// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`.
pub const MULTIPLE_SUBSCRIBERS: i32 = 39;

/// Stops the callbacks (at detach); a no-op when not subscribed.
pub fn unsubscribe() {
    STOPPED.store(true, Ordering::Release);
    LIVE.store(false, Ordering::Release);
    let handle = SUBSCRIBER.swap(0, Ordering::AcqRel);
    let f = UNSUBSCRIBE.load(Ordering::Acquire);
    if handle != 0 && f != 0 {
        // SAFETY: cuptiUnsubscribe with the handle cuptiSubscribe gave, once.
        unsafe { std::mem::transmute::<usize, UnsubscribeFn>(f)(handle as Subscriber) };
    }
}

/// CUPTI's callback: on the thread that called the driver, inside the driver function.
unsafe extern "C" fn on_callback(_user: *mut c_void, domain: u32, id: u32, data: *const c_void) {
    if domain != DOMAIN_DRIVER_API || data.is_null() || !LIVE.load(Ordering::Acquire) {
        return;
    }
    // The shim's own driver calls (and anything it calls while recording) are not the program's.
    let Some(_inside) = guard::enter_from_driver() else {
        return;
    };
    // SAFETY: CUPTI passes a CUpti_CallbackData for this domain, valid for the callback.
    let d = unsafe { &*(data as *const CallbackData) };
    let exit = d.site == API_EXIT;
    let result = if exit && !d.return_value.is_null() {
        // SAFETY: at exit, CUPTI's pointer to the call's CUresult.
        unsafe { *(d.return_value as *const i32) }
    } else {
        0
    };
    let params = d.function_params as *const u8;
    let corr = d.correlation_data;
    // Catches any panic (none may reach CUPTI or the driver) and keeps the program's errno.
    crate::record::recorder::record_guarded(crate::channel::cuda_active, || {
        // SAFETY: the parameter struct and correlation word CUPTI passed for call `id`.
        unsafe { calls::on_call(id, exit, params, corr, result) }
    });
}

/// Tells stack capture which code is the driver's and CUPTI's: a callback's stack starts inside
/// them, above the program's frames (see `guard::enter_from_driver`).
fn mark_driver_code() {
    let ranges: Vec<(usize, usize)> = crate::probes::modules::scan("")
        .iter()
        .filter(|m| {
            let file = m.path.rsplit('/').next().unwrap_or(&m.path);
            file.starts_with("libcuda.so") || file.starts_with("libcupti")
        })
        .flat_map(|m| m.segments.iter().filter(|s| s.exec))
        .map(|s| (s.start as usize, (s.start + s.len) as usize))
        .collect();
    crate::record::stacks::set_driver_ranges(&ranges);
}
