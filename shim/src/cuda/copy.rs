//! Copy wrappers: every 1D, 2D, 3D and peer copy of the driver API and the 1D memsets, timed around
//! the call. A synchronous copy's call time is its transfer time; an asynchronous one's is how long the
//! caller was blocked, which is the evidence that an "async" copy from pageable memory ran
//! synchronously. Asynchronous copies of `MEMSHIM_COPY_EVENT_BYTES` or more are also timed on the GPU,
//! with events recorded around them on their stream (see `events`), which gives their bandwidth.
//! Whether the host side is pageable, pinned, registered or managed is decided by the CLI from the
//! recorded allocations. (`cuMemcpyAtoH`-style array copies and `cuMemcpyBatchAsync` are not
//! recorded yet.)
//!
//! # Safety
//! As for `api`: each `REAL` slot holds the driver function of the same export, called with its own
//! C signature; the arguments are passed through unchanged.
#![allow(unsafe_code, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_ulonglong, c_void};

use memshim_trace::CopyApi as C;

use super::events;
use super::record::copy;
use super::CUresult;
use crate::sys::clock;

type Ptr = *mut c_void;
type CPtr = *const c_void;
type DevPtr = c_ulonglong;

/// A copy as it was made: where, how much, on which stream.
struct Made {
    api: C,
    dst: u64,
    src: u64,
    size: u64,
    stream: u64,
}

/// Makes the real call, timed around it (and on the GPU when it is asynchronous and large enough),
/// and records it. `ptsz` says the export is a per-thread-default-stream variant, whose stream 0 is
/// the calling thread's own.
fn timed(m: Made, ptsz: bool, call: impl FnOnce() -> CUresult) -> CUresult {
    let stream = m.stream as usize as Ptr;
    let gpu = if m.api.is_async() {
        events::before(m.size, stream, ptsz)
    } else {
        None
    };
    let t0 = clock::monotonic_ns();
    let r = call();
    let t1 = clock::monotonic_ns();
    let timer = gpu.and_then(|g| events::after(g, stream, ptsz, r));
    let id = timer.as_ref().map(|t| t.timer);
    copy(m.api, m.dst, m.src, m.size, m.stream, t0, t1 - t0, r, id);
    if let Some(t) = timer {
        t.publish();
    }
    r
}

/// A copy wrapper: times the real call and records it.
macro_rules! copy_wrapper {
    ($name:ident, $api:expr, ($($arg:ident : $ty:ty),*), dst = $dst:expr, src = $src:expr, size = $size:expr, stream = $stream:expr) => {
        wrapper!($name($($arg: $ty),*) |call| {
            let made = Made { api: $api, dst: $dst as u64, src: $src as u64, size: $size as u64, stream: $stream as u64 };
            timed(made, stringify!($name).ends_with("_ptsz"), call)
        });
    };
}

copy_wrapper!(cuMemcpy, C::Memcpy, (dst: DevPtr, src: DevPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpy_ptds, C::Memcpy, (dst: DevPtr, src: DevPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyAsync, C::MemcpyAsync, (dst: DevPtr, src: DevPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyAsync_ptsz, C::MemcpyAsync, (dst: DevPtr, src: DevPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyHtoD_v2, C::MemcpyHtoD, (dst: DevPtr, src: CPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyHtoD_v2_ptds, C::MemcpyHtoD, (dst: DevPtr, src: CPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyDtoH_v2, C::MemcpyDtoH, (dst: Ptr, src: DevPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyDtoH_v2_ptds, C::MemcpyDtoH, (dst: Ptr, src: DevPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyDtoD_v2, C::MemcpyDtoD, (dst: DevPtr, src: DevPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyDtoD_v2_ptds, C::MemcpyDtoD, (dst: DevPtr, src: DevPtr, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyHtoDAsync_v2, C::MemcpyHtoDAsync, (dst: DevPtr, src: CPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyHtoDAsync_v2_ptsz, C::MemcpyHtoDAsync, (dst: DevPtr, src: CPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyDtoHAsync_v2, C::MemcpyDtoHAsync, (dst: Ptr, src: DevPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyDtoHAsync_v2_ptsz, C::MemcpyDtoHAsync, (dst: Ptr, src: DevPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyDtoDAsync_v2, C::MemcpyDtoDAsync, (dst: DevPtr, src: DevPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyDtoDAsync_v2_ptsz, C::MemcpyDtoDAsync, (dst: DevPtr, src: DevPtr, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);

type Ctx = *mut c_void;

copy_wrapper!(cuMemcpyPeer, C::MemcpyPeer, (dst: DevPtr, dc: Ctx, src: DevPtr, sc: Ctx, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyPeer_ptds, C::MemcpyPeer, (dst: DevPtr, dc: Ctx, src: DevPtr, sc: Ctx, n: usize), dst = dst, src = src, size = n, stream = 0);
copy_wrapper!(cuMemcpyPeerAsync, C::MemcpyPeerAsync, (dst: DevPtr, dc: Ctx, src: DevPtr, sc: Ctx, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);
copy_wrapper!(cuMemcpyPeerAsync_ptsz, C::MemcpyPeerAsync, (dst: DevPtr, dc: Ctx, src: DevPtr, sc: Ctx, n: usize, s: Ptr), dst = dst, src = src, size = n, stream = s);

copy_wrapper!(cuMemsetD8_v2, C::Memset, (dst: DevPtr, v: u8, n: usize), dst = dst, src = 0, size = n, stream = 0);
copy_wrapper!(cuMemsetD8_v2_ptds, C::Memset, (dst: DevPtr, v: u8, n: usize), dst = dst, src = 0, size = n, stream = 0);
copy_wrapper!(cuMemsetD16_v2, C::Memset, (dst: DevPtr, v: u16, n: usize), dst = dst, src = 0, size = n * 2, stream = 0);
copy_wrapper!(cuMemsetD16_v2_ptds, C::Memset, (dst: DevPtr, v: u16, n: usize), dst = dst, src = 0, size = n * 2, stream = 0);
copy_wrapper!(cuMemsetD32_v2, C::Memset, (dst: DevPtr, v: u32, n: usize), dst = dst, src = 0, size = n * 4, stream = 0);
copy_wrapper!(cuMemsetD32_v2_ptds, C::Memset, (dst: DevPtr, v: u32, n: usize), dst = dst, src = 0, size = n * 4, stream = 0);
copy_wrapper!(cuMemsetD8Async, C::MemsetAsync, (dst: DevPtr, v: u8, n: usize, s: Ptr), dst = dst, src = 0, size = n, stream = s);
copy_wrapper!(cuMemsetD8Async_ptsz, C::MemsetAsync, (dst: DevPtr, v: u8, n: usize, s: Ptr), dst = dst, src = 0, size = n, stream = s);
copy_wrapper!(cuMemsetD16Async, C::MemsetAsync, (dst: DevPtr, v: u16, n: usize, s: Ptr), dst = dst, src = 0, size = n * 2, stream = s);
copy_wrapper!(cuMemsetD16Async_ptsz, C::MemsetAsync, (dst: DevPtr, v: u16, n: usize, s: Ptr), dst = dst, src = 0, size = n * 2, stream = s);
copy_wrapper!(cuMemsetD32Async, C::MemsetAsync, (dst: DevPtr, v: u32, n: usize, s: Ptr), dst = dst, src = 0, size = n * 4, stream = s);
copy_wrapper!(cuMemsetD32Async_ptsz, C::MemsetAsync, (dst: DevPtr, v: u32, n: usize, s: Ptr), dst = dst, src = 0, size = n * 4, stream = s);

// 2D memsets: `height` rows of `width` elements at `pitch` bytes apart; the bytes set are the rows'.
copy_wrapper!(cuMemsetD2D8_v2, C::Memset, (dst: DevPtr, pitch: usize, v: u8, w: usize, h: usize), dst = dst, src = 0, size = w * h, stream = 0);
copy_wrapper!(cuMemsetD2D8_v2_ptds, C::Memset, (dst: DevPtr, pitch: usize, v: u8, w: usize, h: usize), dst = dst, src = 0, size = w * h, stream = 0);
copy_wrapper!(cuMemsetD2D16_v2, C::Memset, (dst: DevPtr, pitch: usize, v: u16, w: usize, h: usize), dst = dst, src = 0, size = w * h * 2, stream = 0);
copy_wrapper!(cuMemsetD2D16_v2_ptds, C::Memset, (dst: DevPtr, pitch: usize, v: u16, w: usize, h: usize), dst = dst, src = 0, size = w * h * 2, stream = 0);
copy_wrapper!(cuMemsetD2D32_v2, C::Memset, (dst: DevPtr, pitch: usize, v: u32, w: usize, h: usize), dst = dst, src = 0, size = w * h * 4, stream = 0);
copy_wrapper!(cuMemsetD2D32_v2_ptds, C::Memset, (dst: DevPtr, pitch: usize, v: u32, w: usize, h: usize), dst = dst, src = 0, size = w * h * 4, stream = 0);
copy_wrapper!(cuMemsetD2D8Async, C::MemsetAsync, (dst: DevPtr, pitch: usize, v: u8, w: usize, h: usize, s: Ptr), dst = dst, src = 0, size = w * h, stream = s);
copy_wrapper!(cuMemsetD2D8Async_ptsz, C::MemsetAsync, (dst: DevPtr, pitch: usize, v: u8, w: usize, h: usize, s: Ptr), dst = dst, src = 0, size = w * h, stream = s);
copy_wrapper!(cuMemsetD2D16Async, C::MemsetAsync, (dst: DevPtr, pitch: usize, v: u16, w: usize, h: usize, s: Ptr), dst = dst, src = 0, size = w * h * 2, stream = s);
copy_wrapper!(cuMemsetD2D16Async_ptsz, C::MemsetAsync, (dst: DevPtr, pitch: usize, v: u16, w: usize, h: usize, s: Ptr), dst = dst, src = 0, size = w * h * 2, stream = s);
copy_wrapper!(cuMemsetD2D32Async, C::MemsetAsync, (dst: DevPtr, pitch: usize, v: u32, w: usize, h: usize, s: Ptr), dst = dst, src = 0, size = w * h * 4, stream = s);
copy_wrapper!(cuMemsetD2D32Async_ptsz, C::MemsetAsync, (dst: DevPtr, pitch: usize, v: u32, w: usize, h: usize, s: Ptr), dst = dst, src = 0, size = w * h * 4, stream = s);

/// A 2D or 3D copy wrapper: the direction and addresses come from its descriptor (see `shape`).
macro_rules! shaped_wrapper {
    ($name:ident, $layout:expr, async = $async:expr, ($($arg:ident : $ty:ty),*), desc = $desc:ident, stream = $stream:expr) => {
        wrapper!($name($($arg: $ty),*) |call| {
            // SAFETY: the caller hands the driver this descriptor to read; a null one is skipped
            // here (and refused by the driver).
            match unsafe { super::shape::read($desc.cast(), &$layout) } {
                Some(s) => {
                    let made = Made { api: s.api($async), dst: s.dst, src: s.src, size: s.size, stream: $stream as u64 };
                    timed(made, stringify!($name).ends_with("_ptsz"), call)
                }
                None => call(),
            }
        });
    };
}

use super::shape::{COPY_2D, COPY_3D};

shaped_wrapper!(cuMemcpy2D_v2, COPY_2D, async = false, (d: CPtr), desc = d, stream = 0);
shaped_wrapper!(cuMemcpy2D_v2_ptds, COPY_2D, async = false, (d: CPtr), desc = d, stream = 0);
shaped_wrapper!(cuMemcpy2DUnaligned_v2, COPY_2D, async = false, (d: CPtr), desc = d, stream = 0);
shaped_wrapper!(cuMemcpy2DUnaligned_v2_ptds, COPY_2D, async = false, (d: CPtr), desc = d, stream = 0);
shaped_wrapper!(cuMemcpy2DAsync_v2, COPY_2D, async = true, (d: CPtr, s: Ptr), desc = d, stream = s);
shaped_wrapper!(cuMemcpy2DAsync_v2_ptsz, COPY_2D, async = true, (d: CPtr, s: Ptr), desc = d, stream = s);
shaped_wrapper!(cuMemcpy3D_v2, COPY_3D, async = false, (d: CPtr), desc = d, stream = 0);
shaped_wrapper!(cuMemcpy3D_v2_ptds, COPY_3D, async = false, (d: CPtr), desc = d, stream = 0);
shaped_wrapper!(cuMemcpy3DAsync_v2, COPY_3D, async = true, (d: CPtr, s: Ptr), desc = d, stream = s);
shaped_wrapper!(cuMemcpy3DAsync_v2_ptsz, COPY_3D, async = true, (d: CPtr, s: Ptr), desc = d, stream = s);
