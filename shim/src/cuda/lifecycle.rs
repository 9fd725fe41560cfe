//! Wrappers for the calls that decide when the shim may touch its copy-timing events (see
//! `events`): stream capture (no event work while any capture is underway) and context teardown
//! (events made before it are forgotten). They record nothing, and unlike the memory wrappers they
//! act even when the calling thread is already inside the shim: a missed capture could cost the
//! program its graph.
//!
//! # Safety
//! As for `api`: each `REAL` slot holds the driver function of the same export, called with its own
//! C signature; the arguments are passed through unchanged.
#![allow(unsafe_code, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::events;
use super::{CUresult, CUDA_SUCCESS};

type Ptr = *mut c_void;

/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: the capture ended, with an error.
const CAPTURE_INVALIDATED: CUresult = 901;

/// A lifecycle wrapper: the real call inside `$effect` (see `wrapper!`, unguarded).
macro_rules! lifecycle_wrapper {
    ($name:ident ( $($arg:ident : $ty:ty),* ), $effect:path) => {
        wrapper!(unguarded $name($($arg: $ty),*) |call| { $effect(call) });
    };
}

fn begin_capture(call: impl FnOnce() -> CUresult) -> CUresult {
    events::hold();
    let r = call();
    if r != CUDA_SUCCESS {
        events::release();
    }
    r
}

fn end_capture(call: impl FnOnce() -> CUresult) -> CUresult {
    let r = call();
    if r == CUDA_SUCCESS || r == CAPTURE_INVALIDATED {
        events::release();
    }
    r
}

fn context_teardown(call: impl FnOnce() -> CUresult) -> CUresult {
    events::hold();
    events::forget_events();
    let r = call();
    events::release();
    r
}

lifecycle_wrapper!(cuStreamBeginCapture(s: Ptr), begin_capture);
lifecycle_wrapper!(cuStreamBeginCapture_ptsz(s: Ptr), begin_capture);
lifecycle_wrapper!(cuStreamBeginCapture_v2(s: Ptr, mode: c_int), begin_capture);
lifecycle_wrapper!(cuStreamBeginCapture_v2_ptsz(s: Ptr, mode: c_int), begin_capture);
lifecycle_wrapper!(
    cuStreamBeginCaptureToGraph(s: Ptr, g: Ptr, deps: Ptr, data: Ptr, n: usize, mode: c_int),
    begin_capture
);
lifecycle_wrapper!(
    cuStreamBeginCaptureToGraph_ptsz(s: Ptr, g: Ptr, deps: Ptr, data: Ptr, n: usize, mode: c_int),
    begin_capture
);
lifecycle_wrapper!(cuStreamEndCapture(s: Ptr, graph: *mut Ptr), end_capture);
lifecycle_wrapper!(cuStreamEndCapture_ptsz(s: Ptr, graph: *mut Ptr), end_capture);
lifecycle_wrapper!(cuCtxDestroy_v2(ctx: Ptr), context_teardown);
lifecycle_wrapper!(cuDevicePrimaryCtxRelease(dev: c_int), context_teardown);
lifecycle_wrapper!(cuDevicePrimaryCtxRelease_v2(dev: c_int), context_teardown);
lifecycle_wrapper!(cuDevicePrimaryCtxReset(dev: c_int), context_teardown);
lifecycle_wrapper!(cuDevicePrimaryCtxReset_v2(dev: c_int), context_teardown);
