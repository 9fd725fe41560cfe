//! One wrapper per driver export of memory, named and typed exactly as the driver's (so `-lcuda`
//! programs bind to them too). Each calls the real function held in its `REAL` slot and records what
//! happened. (The wrappers of `cuGetProcAddress` are in `table`, which they consult.)
//!
//! # Safety
//! A wrapper's `REAL` slot only ever holds the address of the driver function of the same export name
//! (see `table`), so calling it with the wrapper's own C signature is sound. Out-pointers are read
//! only after the driver reported success, when the driver has written them.
#![allow(unsafe_code, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_uint, c_ulonglong, c_void};

use memshim_trace::{CudaApi as A, DeviceMemory as K};

use super::record::{alloc, failure, free, hint, mem_info};
use super::{CUresult, CUDA_SUCCESS};

type Ptr = *mut c_void;
type DevPtr = c_ulonglong;

/// Records an allocation whose address the driver wrote through `out`.
fn after_alloc(r: CUresult, api: A, kind: K, out: u64, size: u64) -> CUresult {
    if r == CUDA_SUCCESS {
        alloc(api, kind, out, size);
    } else {
        failure(api, size, r);
    }
    r
}

/// Reads an out-pointer the driver filled in, or 0 when it is null.
fn read<T: Copy + Into<u64>>(p: *const T) -> u64 {
    if p.is_null() {
        0
    } else {
        // SAFETY: only called after the driver succeeded and wrote `*p`.
        unsafe { *p }.into()
    }
}

fn read_ptr(p: *const Ptr) -> u64 {
    if p.is_null() {
        0
    } else {
        // SAFETY: as in `read`.
        unsafe { *p as u64 }
    }
}

wrapper!(cuMemAlloc_v2(dptr: *mut DevPtr, size: usize) |call| {
    let r = call();
    after_alloc(r, A::MemAlloc, K::Device, if r == 0 { read(dptr) } else { 0 }, size as u64)
});

wrapper!(cuMemAllocPitch_v2(dptr: *mut DevPtr, pitch: *mut usize, width: usize, height: usize, elem: c_uint) |call| {
    let r = call();
    let bytes = if r == 0 { read(pitch as *const u64) * height as u64 } else { (width * height) as u64 };
    after_alloc(r, A::MemAllocPitch, K::Device, if r == 0 { read(dptr) } else { 0 }, bytes)
});

wrapper!(cuMemAllocManaged(dptr: *mut DevPtr, size: usize, flags: c_uint) |call| {
    let r = call();
    if r == 0 {
        // CUPTI's unified-memory counters start before the program has its first managed memory
        // (it migrates only once touched), not at the sampler's next tick: a program that moved
        // 256 MiB each way in its first half second was told of no migrations at all.
        if let Some(c) = crate::channel::config().filter(|c| c.cupti) {
            crate::cuda::cupti::start(c.cupti_lib.as_deref());
        }
    }
    after_alloc(r, A::MemAllocManaged, K::Managed, if r == 0 { read(dptr) } else { 0 }, size as u64)
});

macro_rules! alloc_async {
    ($name:ident) => {
        wrapper!($name(dptr: *mut DevPtr, size: usize, stream: Ptr) |call| {
            let r = call();
            after_alloc(r, A::MemAllocAsync, K::Device, if r == 0 { read(dptr) } else { 0 }, size as u64)
        });
    };
}
alloc_async!(cuMemAllocAsync);
alloc_async!(cuMemAllocAsync_ptsz);

macro_rules! alloc_pool {
    ($name:ident) => {
        wrapper!($name(dptr: *mut DevPtr, size: usize, pool: Ptr, stream: Ptr) |call| {
            let r = call();
            after_alloc(r, A::MemAllocFromPoolAsync, K::Device, if r == 0 { read(dptr) } else { 0 }, size as u64)
        });
    };
}
alloc_pool!(cuMemAllocFromPoolAsync);
alloc_pool!(cuMemAllocFromPoolAsync_ptsz);

wrapper!(cuMemFree_v2(dptr: DevPtr) |call| {
    if dptr != 0 {
        free(A::MemFree, K::Device, dptr);
    }
    call()
});

macro_rules! free_async {
    ($name:ident) => {
        // A free-async counts when it is issued: the memory is the pool's again from then on.
        wrapper!($name(dptr: DevPtr, stream: Ptr) |call| {
            if dptr != 0 {
                free(A::MemFreeAsync, K::Device, dptr);
            }
            call()
        });
    };
}
free_async!(cuMemFreeAsync);
free_async!(cuMemFreeAsync_ptsz);

wrapper!(cuMemHostAlloc(pp: *mut Ptr, size: usize, flags: c_uint) |call| {
    let r = call();
    after_alloc(r, A::MemHostAlloc, K::PinnedHost, if r == 0 { read_ptr(pp) } else { 0 }, size as u64)
});

wrapper!(cuMemAllocHost_v2(pp: *mut Ptr, size: usize) |call| {
    let r = call();
    after_alloc(r, A::MemAllocHost, K::PinnedHost, if r == 0 { read_ptr(pp) } else { 0 }, size as u64)
});

wrapper!(cuMemFreeHost(p: Ptr) |call| {
    if !p.is_null() {
        free(A::MemFreeHost, K::PinnedHost, p as u64);
    }
    call()
});

wrapper!(cuMemHostRegister_v2(p: Ptr, size: usize, flags: c_uint) |call| {
    let r = call();
    after_alloc(r, A::MemHostRegister, K::Registered, p as u64, size as u64)
});

wrapper!(cuMemHostUnregister(p: Ptr) |call| {
    free(A::MemHostUnregister, K::Registered, p as u64);
    call()
});

wrapper!(cuMemAddressReserve(ptr: *mut DevPtr, size: usize, align: usize, addr: DevPtr, flags: c_ulonglong) |call| {
    let r = call();
    after_alloc(r, A::MemAddressReserve, K::Reserved, if r == 0 { read(ptr) } else { 0 }, size as u64)
});

wrapper!(cuMemAddressFree(ptr: DevPtr, size: usize) |call| {
    free(A::MemAddressFree, K::Reserved, ptr);
    call()
});

wrapper!(cuMemCreate(handle: *mut c_ulonglong, size: usize, prop: *const c_void, flags: c_ulonglong) |call| {
    let r = call();
    after_alloc(r, A::MemCreate, K::Physical, if r == 0 { read(handle) } else { 0 }, size as u64)
});

wrapper!(cuMemRelease(handle: c_ulonglong) |call| {
    free(A::MemRelease, K::Physical, handle);
    call()
});

wrapper!(cuMemMap(ptr: DevPtr, size: usize, offset: usize, handle: c_ulonglong, flags: c_ulonglong) |call| {
    let r = call();
    after_alloc(r, A::MemMap, K::Mapped, ptr, size as u64)
});

wrapper!(cuMemUnmap(ptr: DevPtr, size: usize) |call| {
    free(A::MemUnmap, K::Mapped, ptr);
    call()
});

macro_rules! prefetch {
    ($name:ident) => {
        wrapper!($name(dptr: DevPtr, count: usize, device: c_int, stream: Ptr) |call| {
            let r = call();
            if r == CUDA_SUCCESS {
                hint(A::MemPrefetchAsync, dptr, count as u64, device);
            }
            r
        });
    };
}
prefetch!(cuMemPrefetchAsync);
prefetch!(cuMemPrefetchAsync_ptsz);

/// `CUmemLocation`: where memory is to be, passed by value by the `_v2` hints (CUDA 12.2 on; in
/// CUDA 13 the only ones).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemLocation {
    kind: c_int,
    id: c_int,
}

impl MemLocation {
    /// As the legacy hints' device argument: the ordinal of a device, `CU_DEVICE_CPU` (-1) for the
    /// host (`CU_MEM_LOCATION_TYPE_HOST` and its NUMA forms).
    fn device(self) -> c_int {
        const DEVICE: c_int = 1;
        if self.kind == DEVICE {
            self.id
        } else {
            -1
        }
    }
}

macro_rules! prefetch_v2 {
    ($name:ident) => {
        wrapper!($name(dptr: DevPtr, count: usize, location: MemLocation, flags: c_uint, stream: Ptr) |call| {
            let r = call();
            if r == CUDA_SUCCESS {
                hint(A::MemPrefetchAsync, dptr, count as u64, location.device());
            }
            r
        });
    };
}
prefetch_v2!(cuMemPrefetchAsync_v2);
prefetch_v2!(cuMemPrefetchAsync_v2_ptsz);

wrapper!(cuMemAdvise_v2(dptr: DevPtr, count: usize, advice: c_int, location: MemLocation) |call| {
    let r = call();
    if r == CUDA_SUCCESS {
        hint(A::MemAdvise, dptr, count as u64, advice);
    }
    r
});

wrapper!(cuMemAdvise(dptr: DevPtr, count: usize, advice: c_int, device: c_int) |call| {
    let r = call();
    if r == CUDA_SUCCESS {
        hint(A::MemAdvise, dptr, count as u64, advice);
    }
    r
});

wrapper!(cuMemGetInfo_v2(free_bytes: *mut usize, total: *mut usize) |call| {
    let r = call();
    if r == CUDA_SUCCESS {
        mem_info(read(free_bytes as *const u64), read(total as *const u64));
    }
    r
});
