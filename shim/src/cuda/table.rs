//! Which driver exports the shim wraps, with the ABI facts needed to hand back the right wrapper for a
//! `cuGetProcAddress` request: the base name callers ask for, the `cudaVersion` range in which that
//! name means this export, and whether it is the per-thread-default-stream variant.
//!
//! # Safety
//! A wrapper is handed out only once its `REAL` slot holds the driver function of the same export:
//! identified exactly by `dladdr` (the pointer is that export's address), or by name, version and
//! flags within the ranges below; when neither is certain, the caller keeps the driver's pointer
//! (untracked, never wrong). A slot is written once; a second, different pointer is refused. The
//! `cuGetProcAddress` wrappers, which hand wrappers out, are here with the table they consult; like
//! every wrapper (see `api`), each calls only the driver function in its own `REAL` slot.
#![allow(unsafe_code, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_ulonglong, c_void, CStr};
use std::sync::atomic::AtomicUsize;

use super::slot::claim;
use super::{api, copy, lifecycle, CUDA_SUCCESS};
use crate::{record::stacks, sys::real};

/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`.
const PER_THREAD_DEFAULT_STREAM: c_ulonglong = 2;

struct Fp(*const ());
// SAFETY: a function address is immutable and valid from every thread.
unsafe impl Sync for Fp {}

/// One wrapped export.
pub struct Entry {
    export: &'static str,
    base: &'static str,
    min_version: c_int,
    max_version: c_int,
    ptds: bool,
    wrapper: Fp,
    real: &'static AtomicUsize,
}

macro_rules! entry {
    (copy $name:ident, $base:literal, $min:expr) => {
        entry!(@in copy, $name, $base, $min, c_int::MAX, false)
    };
    (copy $name:ident, $base:literal, $min:expr, ptds) => {
        entry!(@in copy, $name, $base, $min, c_int::MAX, true)
    };
    (life $name:ident, $base:literal, $min:expr, $max:expr, $ptds:expr) => {
        entry!(@in lifecycle, $name, $base, $min, $max, $ptds)
    };
    ($name:ident, $base:literal, $min:expr) => {
        entry!($name, $base, $min, c_int::MAX, false)
    };
    ($name:ident, $base:literal, $min:expr, ptds) => {
        entry!($name, $base, $min, c_int::MAX, true)
    };
    ($name:ident, $base:literal, $min:expr, $max:expr, $ptds:expr) => {
        entry!(@in api, $name, $base, $min, $max, $ptds)
    };
    (here $name:ident, $base:literal, $min:expr, $max:expr, $ptds:expr) => {
        entry!(@in self, $name, $base, $min, $max, $ptds)
    };
    (@in $module:ident, $name:ident, $base:literal, $min:expr, $max:expr, $ptds:expr) => {
        Entry {
            export: stringify!($name),
            base: $base,
            min_version: $min,
            max_version: $max,
            ptds: $ptds,
            wrapper: Fp($module::$name as *const ()),
            real: &$module::$name::REAL,
        }
    };
}

static ENTRIES: &[Entry] = &[
    entry!(cuMemAlloc_v2, "cuMemAlloc", 3020),
    entry!(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020),
    entry!(cuMemAllocManaged, "cuMemAllocManaged", 6000),
    entry!(cuMemAllocAsync, "cuMemAllocAsync", 11020),
    entry!(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, ptds),
    entry!(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020),
    entry!(
        cuMemAllocFromPoolAsync_ptsz,
        "cuMemAllocFromPoolAsync",
        11020,
        ptds
    ),
    entry!(cuMemFree_v2, "cuMemFree", 3020),
    entry!(cuMemFreeAsync, "cuMemFreeAsync", 11020),
    entry!(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, ptds),
    entry!(cuMemHostAlloc, "cuMemHostAlloc", 2020),
    entry!(cuMemAllocHost_v2, "cuMemAllocHost", 3020),
    entry!(cuMemFreeHost, "cuMemFreeHost", 2000),
    entry!(cuMemHostRegister_v2, "cuMemHostRegister", 6050),
    entry!(cuMemHostUnregister, "cuMemHostUnregister", 4000),
    entry!(cuMemAddressReserve, "cuMemAddressReserve", 10020),
    entry!(cuMemAddressFree, "cuMemAddressFree", 10020),
    entry!(cuMemCreate, "cuMemCreate", 10020),
    entry!(cuMemRelease, "cuMemRelease", 10020),
    entry!(cuMemMap, "cuMemMap", 10020),
    entry!(cuMemUnmap, "cuMemUnmap", 10020),
    // From CUDA 12.2 these names mean the _v2 ABI (a CUmemLocation argument); in CUDA 13 it is the
    // only one (a program that prefetched was told it made no prefetch calls).
    entry!(cuMemPrefetchAsync, "cuMemPrefetchAsync", 8000, 12020, false),
    entry!(
        cuMemPrefetchAsync_ptsz,
        "cuMemPrefetchAsync",
        8000,
        12020,
        true
    ),
    entry!(
        cuMemPrefetchAsync_v2,
        "cuMemPrefetchAsync",
        12020,
        c_int::MAX,
        false
    ),
    entry!(
        cuMemPrefetchAsync_v2_ptsz,
        "cuMemPrefetchAsync",
        12020,
        c_int::MAX,
        true
    ),
    entry!(cuMemAdvise, "cuMemAdvise", 8000, 12020, false),
    entry!(cuMemAdvise_v2, "cuMemAdvise", 12020, c_int::MAX, false),
    entry!(cuMemGetInfo_v2, "cuMemGetInfo", 3020),
    entry!(copy cuMemcpy, "cuMemcpy", 4000),
    entry!(copy cuMemcpy_ptds, "cuMemcpy", 7000, ptds),
    entry!(copy cuMemcpyAsync, "cuMemcpyAsync", 4000),
    entry!(copy cuMemcpyAsync_ptsz, "cuMemcpyAsync", 7000, ptds),
    entry!(copy cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020),
    entry!(copy cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 7000, ptds),
    entry!(copy cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020),
    entry!(copy cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 7000, ptds),
    entry!(copy cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020),
    entry!(copy cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 7000, ptds),
    entry!(copy cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020),
    entry!(copy cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 7000, ptds),
    entry!(copy cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020),
    entry!(copy cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 7000, ptds),
    entry!(copy cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 3020),
    entry!(copy cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 7000, ptds),
    entry!(copy cuMemcpyPeer, "cuMemcpyPeer", 4000),
    entry!(copy cuMemcpyPeer_ptds, "cuMemcpyPeer", 7000, ptds),
    entry!(copy cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000),
    entry!(copy cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 7000, ptds),
    entry!(copy cuMemsetD8_v2, "cuMemsetD8", 3020),
    entry!(copy cuMemsetD8_v2_ptds, "cuMemsetD8", 7000, ptds),
    entry!(copy cuMemsetD8Async, "cuMemsetD8Async", 3020),
    entry!(copy cuMemsetD8Async_ptsz, "cuMemsetD8Async", 7000, ptds),
    entry!(copy cuMemsetD16_v2, "cuMemsetD16", 3020),
    entry!(copy cuMemsetD16_v2_ptds, "cuMemsetD16", 7000, ptds),
    entry!(copy cuMemsetD16Async, "cuMemsetD16Async", 3020),
    entry!(copy cuMemsetD16Async_ptsz, "cuMemsetD16Async", 7000, ptds),
    entry!(copy cuMemsetD32_v2, "cuMemsetD32", 3020),
    entry!(copy cuMemsetD32_v2_ptds, "cuMemsetD32", 7000, ptds),
    entry!(copy cuMemsetD32Async, "cuMemsetD32Async", 3020),
    entry!(copy cuMemsetD32Async_ptsz, "cuMemsetD32Async", 7000, ptds),
    entry!(copy cuMemsetD2D8_v2, "cuMemsetD2D8", 3020),
    entry!(copy cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 7000, ptds),
    entry!(copy cuMemsetD2D16_v2, "cuMemsetD2D16", 3020),
    entry!(copy cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 7000, ptds),
    entry!(copy cuMemsetD2D32_v2, "cuMemsetD2D32", 3020),
    entry!(copy cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 7000, ptds),
    entry!(copy cuMemsetD2D8Async, "cuMemsetD2D8Async", 3020),
    entry!(copy cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 7000, ptds),
    entry!(copy cuMemsetD2D16Async, "cuMemsetD2D16Async", 3020),
    entry!(copy cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 7000, ptds),
    entry!(copy cuMemsetD2D32Async, "cuMemsetD2D32Async", 3020),
    entry!(copy cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 7000, ptds),
    entry!(copy cuMemcpy2D_v2, "cuMemcpy2D", 3020),
    entry!(copy cuMemcpy2D_v2_ptds, "cuMemcpy2D", 7000, ptds),
    entry!(copy cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned", 3020),
    entry!(copy cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 7000, ptds),
    entry!(copy cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 3020),
    entry!(copy cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 7000, ptds),
    entry!(copy cuMemcpy3D_v2, "cuMemcpy3D", 3020),
    entry!(copy cuMemcpy3D_v2_ptds, "cuMemcpy3D", 7000, ptds),
    entry!(copy cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 3020),
    entry!(copy cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 7000, ptds),
    // Stream capture and context teardown gate the copy-timing events (see `events`).
    entry!(life cuStreamBeginCapture, "cuStreamBeginCapture", 10000, 10010, false),
    entry!(life cuStreamBeginCapture_ptsz, "cuStreamBeginCapture", 10000, 10010, true),
    entry!(life cuStreamBeginCapture_v2, "cuStreamBeginCapture", 10010, c_int::MAX, false),
    entry!(life cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", 10010, c_int::MAX, true),
    entry!(life cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", 12030, c_int::MAX, false),
    entry!(life cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph", 12030, c_int::MAX, true),
    entry!(life cuStreamEndCapture, "cuStreamEndCapture", 10000, c_int::MAX, false),
    entry!(life cuStreamEndCapture_ptsz, "cuStreamEndCapture", 10000, c_int::MAX, true),
    entry!(life cuCtxDestroy_v2, "cuCtxDestroy", 4000, c_int::MAX, false),
    entry!(life cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 7000, 11000, false),
    entry!(life cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, c_int::MAX, false),
    entry!(life cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 7000, 11000, false),
    entry!(life cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, c_int::MAX, false),
    entry!(here cuGetProcAddress, "cuGetProcAddress", 11030, 12000, false),
    entry!(here cuGetProcAddress_v2, "cuGetProcAddress", 12000, c_int::MAX, false),
];

wrapper!(cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: c_ulonglong) |call| {
    let r = call();
    if r == CUDA_SUCCESS {
        swap_in_wrapper(symbol, pfn, version, flags);
    }
    r
});

wrapper!(cuGetProcAddress_v2(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: c_ulonglong, status: *mut c_int) |call| {
    let r = call();
    if r == CUDA_SUCCESS {
        swap_in_wrapper(symbol, pfn, version, flags);
    }
    r
});

/// `dlsym` of a wrapped export: the wrapper, or `None` to let the real `dlsym` answer.
pub fn dlsym_wrapper(handle: *mut c_void, name: &str) -> Option<*mut c_void> {
    let e = ENTRIES.iter().find(|e| e.export == name)?;
    let cname = std::ffi::CString::new(name).ok()?;
    let lookup = if handle == libc::RTLD_DEFAULT || handle == libc::RTLD_NEXT {
        // Both would find the shim itself first; what the caller wants is the driver's.
        libc::RTLD_NEXT
    } else {
        handle
    };
    let p = real::dlsym(lookup, &cname) as usize;
    claim(e.real, p).then_some(e.wrapper.0 as *mut c_void)
}

/// After a successful `cuGetProcAddress`: replaces `*pfn` with the wrapper when it is certain which
/// export the driver returned.
pub fn swap_in_wrapper(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: c_ulonglong,
) {
    if symbol.is_null() || pfn.is_null() {
        return;
    }
    // SAFETY: the driver just accepted `symbol` as a NUL-terminated name.
    let Ok(name) = unsafe { CStr::from_ptr(symbol) }.to_str() else {
        return;
    };
    if !ENTRIES.iter().any(|e| e.base == name || e.export == name) {
        return;
    }
    // SAFETY: the driver reported success, so it wrote a function pointer through `pfn`.
    let p = unsafe { *pfn } as usize;
    if p == 0 || stacks::in_self(p) {
        return;
    }
    let Some(e) = by_address(p).or_else(|| by_request(name, version, flags)) else {
        return;
    };
    if claim(e.real, p) {
        // SAFETY: `pfn` is the caller's valid out-pointer (the driver just wrote it).
        unsafe { *pfn = e.wrapper.0 as *mut c_void };
    }
}

/// The entry whose export is exactly at `p`, asked of the loader.
fn by_address(p: usize) -> Option<&'static Entry> {
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `info` is a valid out-structure; dladdr accepts any address.
    if unsafe { libc::dladdr(p as *const c_void, &mut info) } == 0
        || info.dli_saddr as usize != p
        || info.dli_sname.is_null()
    {
        return None;
    }
    // SAFETY: a non-null dli_sname is a NUL-terminated symbol name owned by the loader.
    let sname = unsafe { CStr::from_ptr(info.dli_sname) }.to_str().ok()?;
    ENTRIES.iter().find(|e| e.export == sname)
}

/// The entry a request means, by base name, version and flags.
fn by_request(name: &str, version: c_int, flags: c_ulonglong) -> Option<&'static Entry> {
    let want_ptds = flags & PER_THREAD_DEFAULT_STREAM != 0;
    let fits = |e: &&Entry| e.base == name && version >= e.min_version && version < e.max_version;
    let pick = |ptds: bool| {
        ENTRIES
            .iter()
            .filter(fits)
            .filter(|e| e.ptds == ptds)
            .max_by_key(|e| e.min_version)
    };
    let has_ptds_variant = ENTRIES.iter().any(|e| e.base == name && e.ptds);
    if want_ptds && has_ptds_variant {
        pick(true)
    } else {
        pick(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_map_to_the_export_of_their_version_and_stream_mode() {
        let export = |n, v, f| by_request(n, v, f).map(|e| e.export);
        assert_eq!(export("cuMemAlloc", 12000, 0), Some("cuMemAlloc_v2"));
        assert_eq!(export("cuMemAlloc", 12000, 2), Some("cuMemAlloc_v2"));
        assert_eq!(export("cuMemAlloc", 2000, 0), None);
        assert_eq!(
            export("cuMemAllocAsync", 12000, 2),
            Some("cuMemAllocAsync_ptsz")
        );
        assert_eq!(export("cuMemAllocAsync", 12000, 1), Some("cuMemAllocAsync"));
        assert_eq!(
            export("cuMemPrefetchAsync", 12000, 0),
            Some("cuMemPrefetchAsync")
        );
        // From 12.2 the name means the CUmemLocation form, wrapped too.
        assert_eq!(
            export("cuMemPrefetchAsync", 12020, 0),
            Some("cuMemPrefetchAsync_v2")
        );
        assert_eq!(
            export("cuMemPrefetchAsync", 13000, 2),
            Some("cuMemPrefetchAsync_v2_ptsz")
        );
        assert_eq!(export("cuMemAdvise", 13000, 0), Some("cuMemAdvise_v2"));
        assert_eq!(
            export("cuGetProcAddress", 11030, 0),
            Some("cuGetProcAddress")
        );
        assert_eq!(
            export("cuGetProcAddress", 12000, 0),
            Some("cuGetProcAddress_v2")
        );
        assert_eq!(export("cuLaunchKernel", 12000, 0), None);
        assert_eq!(
            export("cuStreamBeginCapture", 12000, 2),
            Some("cuStreamBeginCapture_v2_ptsz")
        );
        assert_eq!(
            export("cuStreamBeginCapture", 10000, 0),
            Some("cuStreamBeginCapture")
        );
        assert_eq!(
            export("cuDevicePrimaryCtxRelease", 13000, 2),
            Some("cuDevicePrimaryCtxRelease_v2")
        );
    }

    #[test]
    fn every_entry_is_reachable_by_its_own_request() {
        for e in ENTRIES {
            let flags = if e.ptds { 2 } else { 0 };
            let got = by_request(e.base, e.min_version, flags).map(|x| x.export);
            assert_eq!(got, Some(e.export), "{}", e.export);
        }
    }
}
