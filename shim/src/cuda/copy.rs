//! Copy wrappers: every 1D copy of the driver API, timed around the call. A synchronous copy's call
//! time is its transfer time; an asynchronous one's is how long the caller was blocked, which is the
//! evidence that an "async" copy from pageable memory ran synchronously. Whether the host side is
//! pageable, pinned, registered or managed is decided by the CLI from the recorded allocations.
//! (2D/3D and peer copies are not recorded yet.)
//!
//! # Safety
//! As for `api`: each `REAL` slot holds the driver function of the same export, called with its own
//! C signature; the arguments are passed through unchanged.
#![allow(unsafe_code, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_ulonglong, c_void};

use memshim_trace::CopyApi as C;

use super::record::copy;
use crate::clock;

type Ptr = *mut c_void;
type CPtr = *const c_void;
type DevPtr = c_ulonglong;

/// A copy wrapper: times the real call and records it.
macro_rules! copy_wrapper {
    ($name:ident, $api:expr, ($($arg:ident : $ty:ty),*), dst = $dst:expr, src = $src:expr, size = $size:expr, stream = $stream:expr) => {
        wrapper!($name($($arg: $ty),*) |call| {
            let t0 = clock::monotonic_ns();
            let r = call();
            let t1 = clock::monotonic_ns();
            copy($api, $dst as u64, $src as u64, $size as u64, $stream as u64, t0, t1 - t0, r);
            r
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
