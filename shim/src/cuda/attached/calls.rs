//! What each driver call CUPTI reports means, and its recording: the same records the driver
//! wrappers make (`cuda::api`, `cuda::copy`), from the call's parameters as CUPTI hands them over.
//!
//! CUPTI passes a call's arguments as one C struct of them in order (`generated_cuda_meta.h`'s
//! `<name>_params`), so each is read at its natural offset: every argument the table names is 8
//! bytes wide (pointers, `size_t`, `CUdeviceptr`, handles) except the memset value, which is never
//! read. A call is told by its callback id (`cupti_driver_cbid.h`), stable across CUDA releases.
//!
//! Frees are recorded on entry (before the driver releases, as the wrappers do), allocations and
//! copies on exit with the driver's result; a copy's time runs from entry to exit (CUPTI's
//! per-call correlation word carries the start). Copies are not timed on the GPU here: that needs
//! events recorded around the copy on its stream, which a callback cannot place.
//!
//! # Safety
//! `on_call` is given CUPTI's parameter struct of the call whose id it is given, valid for the
//! callback; each field is read at the offset this table gives for that id, and an out-pointer is
//! followed only after the driver reported success (it wrote it) and when it is not null.
#![allow(unsafe_code)]

use memshim_trace::{CopyApi as C, CudaApi as A, DeviceMemory as K};

use crate::cuda::record::{alloc, copy, failure, free, mem_info};
use crate::cuda::shape::{self, Layout, COPY_2D, COPY_3D};
use crate::sys::clock;

/// Where an allocation's address is.
#[derive(Clone, Copy)]
enum Out {
    /// Written by the driver through the pointer at this offset.
    Through(usize),
    /// The argument at this offset (a registration or a mapping names its own address).
    Arg(usize),
}

/// How many bytes an allocation holds.
#[derive(Clone, Copy)]
enum Bytes {
    /// The argument at this offset.
    Arg(usize),
    /// `cuMemAllocPitch`: the pitch the driver wrote (through the pointer at 8) times the rows (24).
    Pitched,
}

/// How many bytes a copy or memset moves.
#[derive(Clone, Copy)]
enum Moved {
    /// The argument at this offset, times the element size.
    Arg(usize, u64),
    /// Width (first offset) times height (second), times the element size.
    Rows(usize, usize, u64),
}

/// What a call is.
#[derive(Clone, Copy)]
enum Kind {
    Alloc(A, K, Out, Bytes),
    /// Its first argument is the address or handle released.
    Free(A, K),
    /// Destination at 0, source at `src` (none for a memset), bytes, stream at this offset.
    Copy(C, Option<usize>, Moved, Option<usize>),
    /// A 2D or 3D copy: its descriptor's address at 0, the stream at 8 when asynchronous.
    Shaped(&'static Layout, bool),
    MemInfo,
}

const NO_STREAM: Option<usize> = None;

/// Every call subscribed to, by callback id.
#[rustfmt::skip]
const CALLS: &[(u32, Kind)] = &[
    (243, Kind::Alloc(A::MemAlloc, K::Device, Out::Through(0), Bytes::Arg(8))),
    (244, Kind::Alloc(A::MemAllocPitch, K::Device, Out::Through(0), Bytes::Pitched)),
    (371, Kind::Alloc(A::MemAllocManaged, K::Managed, Out::Through(0), Bytes::Arg(8))),
    (598, Kind::Alloc(A::MemAllocAsync, K::Device, Out::Through(0), Bytes::Arg(8))),
    (599, Kind::Alloc(A::MemAllocAsync, K::Device, Out::Through(0), Bytes::Arg(8))),
    (611, Kind::Alloc(A::MemAllocFromPoolAsync, K::Device, Out::Through(0), Bytes::Arg(8))),
    (612, Kind::Alloc(A::MemAllocFromPoolAsync, K::Device, Out::Through(0), Bytes::Arg(8))),
    (39, Kind::Alloc(A::MemHostAlloc, K::PinnedHost, Out::Through(0), Bytes::Arg(8))),
    (271, Kind::Alloc(A::MemHostAlloc, K::PinnedHost, Out::Through(0), Bytes::Arg(8))),
    (294, Kind::Alloc(A::MemAllocHost, K::PinnedHost, Out::Through(0), Bytes::Arg(8))),
    (301, Kind::Alloc(A::MemHostRegister, K::Registered, Out::Arg(0), Bytes::Arg(8))),
    (379, Kind::Alloc(A::MemHostRegister, K::Registered, Out::Arg(0), Bytes::Arg(8))),
    (547, Kind::Alloc(A::MemAddressReserve, K::Reserved, Out::Through(0), Bytes::Arg(8))),
    (549, Kind::Alloc(A::MemCreate, K::Physical, Out::Through(0), Bytes::Arg(8))),
    (551, Kind::Alloc(A::MemMap, K::Mapped, Out::Arg(0), Bytes::Arg(8))),
    (245, Kind::Free(A::MemFree, K::Device)),
    (600, Kind::Free(A::MemFreeAsync, K::Device)),
    (601, Kind::Free(A::MemFreeAsync, K::Device)),
    (38, Kind::Free(A::MemFreeHost, K::PinnedHost)),
    (302, Kind::Free(A::MemHostUnregister, K::Registered)),
    (548, Kind::Free(A::MemAddressFree, K::Reserved)),
    (550, Kind::Free(A::MemRelease, K::Physical)),
    (552, Kind::Free(A::MemUnmap, K::Mapped)),
    (242, Kind::MemInfo),
    // 1D copies: (dst, src, bytes[, stream]).
    (305, Kind::Copy(C::Memcpy, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (408, Kind::Copy(C::Memcpy, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (306, Kind::Copy(C::MemcpyAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (418, Kind::Copy(C::MemcpyAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (276, Kind::Copy(C::MemcpyHtoD, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (397, Kind::Copy(C::MemcpyHtoD, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (278, Kind::Copy(C::MemcpyDtoH, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (398, Kind::Copy(C::MemcpyDtoH, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (280, Kind::Copy(C::MemcpyDtoD, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (399, Kind::Copy(C::MemcpyDtoD, Some(8), Moved::Arg(16, 1), NO_STREAM)),
    (277, Kind::Copy(C::MemcpyHtoDAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (421, Kind::Copy(C::MemcpyHtoDAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (279, Kind::Copy(C::MemcpyDtoHAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (422, Kind::Copy(C::MemcpyDtoHAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (281, Kind::Copy(C::MemcpyDtoDAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    (423, Kind::Copy(C::MemcpyDtoDAsync, Some(8), Moved::Arg(16, 1), Some(24))),
    // Peer copies: (dst, dst context, src, src context, bytes[, stream]).
    (318, Kind::Copy(C::MemcpyPeer, Some(16), Moved::Arg(32, 1), NO_STREAM)),
    (409, Kind::Copy(C::MemcpyPeer, Some(16), Moved::Arg(32, 1), NO_STREAM)),
    (319, Kind::Copy(C::MemcpyPeerAsync, Some(16), Moved::Arg(32, 1), Some(40))),
    (426, Kind::Copy(C::MemcpyPeerAsync, Some(16), Moved::Arg(32, 1), Some(40))),
    // Memsets: (dst, value, count[, stream]); 2D: (dst, pitch, value, width, height[, stream]).
    (249, Kind::Copy(C::Memset, None, Moved::Arg(16, 1), NO_STREAM)),
    (411, Kind::Copy(C::Memset, None, Moved::Arg(16, 1), NO_STREAM)),
    (250, Kind::Copy(C::Memset, None, Moved::Arg(16, 2), NO_STREAM)),
    (412, Kind::Copy(C::Memset, None, Moved::Arg(16, 2), NO_STREAM)),
    (251, Kind::Copy(C::Memset, None, Moved::Arg(16, 4), NO_STREAM)),
    (413, Kind::Copy(C::Memset, None, Moved::Arg(16, 4), NO_STREAM)),
    (216, Kind::Copy(C::MemsetAsync, None, Moved::Arg(16, 1), Some(24))),
    (428, Kind::Copy(C::MemsetAsync, None, Moved::Arg(16, 1), Some(24))),
    (218, Kind::Copy(C::MemsetAsync, None, Moved::Arg(16, 2), Some(24))),
    (429, Kind::Copy(C::MemsetAsync, None, Moved::Arg(16, 2), Some(24))),
    (220, Kind::Copy(C::MemsetAsync, None, Moved::Arg(16, 4), Some(24))),
    (430, Kind::Copy(C::MemsetAsync, None, Moved::Arg(16, 4), Some(24))),
    (252, Kind::Copy(C::Memset, None, Moved::Rows(24, 32, 1), NO_STREAM)),
    (414, Kind::Copy(C::Memset, None, Moved::Rows(24, 32, 1), NO_STREAM)),
    (253, Kind::Copy(C::Memset, None, Moved::Rows(24, 32, 2), NO_STREAM)),
    (415, Kind::Copy(C::Memset, None, Moved::Rows(24, 32, 2), NO_STREAM)),
    (254, Kind::Copy(C::Memset, None, Moved::Rows(24, 32, 4), NO_STREAM)),
    (416, Kind::Copy(C::Memset, None, Moved::Rows(24, 32, 4), NO_STREAM)),
    (222, Kind::Copy(C::MemsetAsync, None, Moved::Rows(24, 32, 1), Some(40))),
    (431, Kind::Copy(C::MemsetAsync, None, Moved::Rows(24, 32, 1), Some(40))),
    (224, Kind::Copy(C::MemsetAsync, None, Moved::Rows(24, 32, 2), Some(40))),
    (432, Kind::Copy(C::MemsetAsync, None, Moved::Rows(24, 32, 2), Some(40))),
    (226, Kind::Copy(C::MemsetAsync, None, Moved::Rows(24, 32, 4), Some(40))),
    (433, Kind::Copy(C::MemsetAsync, None, Moved::Rows(24, 32, 4), Some(40))),
    // 2D and 3D copies: (descriptor[, stream]).
    (287, Kind::Shaped(&COPY_2D, false)),
    (405, Kind::Shaped(&COPY_2D, false)),
    (288, Kind::Shaped(&COPY_2D, false)),
    (406, Kind::Shaped(&COPY_2D, false)),
    (289, Kind::Shaped(&COPY_2D, true)),
    (424, Kind::Shaped(&COPY_2D, true)),
    (290, Kind::Shaped(&COPY_3D, false)),
    (407, Kind::Shaped(&COPY_3D, false)),
    (291, Kind::Shaped(&COPY_3D, true)),
    (425, Kind::Shaped(&COPY_3D, true)),
];

/// The callback ids to enable.
pub fn ids() -> impl Iterator<Item = u32> {
    CALLS.iter().map(|(id, _)| *id)
}

/// What id `id` stands for, said when a CUPTI cannot enable it: the ones a CUPTI may be too old for
/// (stream-ordered allocation since CUDA 11.2, virtual memory since 10.2) by name.
pub fn name(id: u32) -> &'static str {
    match id {
        598 | 599 => "cuMemAllocAsync",
        600 | 601 => "cuMemFreeAsync",
        611 | 612 => "cuMemAllocFromPoolAsync",
        547..=552 => "the virtual memory calls (cuMemCreate, cuMemMap, ...)",
        _ => "a memory call or copy",
    }
}

fn kind(id: u32) -> Option<Kind> {
    CALLS.iter().find(|(i, _)| *i == id).map(|(_, k)| *k)
}

/// The 8-byte argument at `off` of the parameter struct `p`.
///
/// # Safety
/// `p` is the parameter struct of a call whose table entry names `off`.
unsafe fn arg(p: *const u8, off: usize) -> u64 {
    // SAFETY: see the function's contract; the struct is the driver's, unaligned reads are fine.
    unsafe { std::ptr::read_unaligned(p.add(off) as *const u64) }
}

/// The 8-byte value the driver wrote through the pointer argument at `off`, 0 when it is null.
///
/// # Safety
/// As for `arg`, and the driver has written through that pointer (it reported success).
unsafe fn through(p: *const u8, off: usize) -> u64 {
    // SAFETY: as for `arg`.
    let ptr = unsafe { arg(p, off) } as *const u64;
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: the driver's out-pointer, written by it.
    unsafe { std::ptr::read_unaligned(ptr) }
}

/// Records the call with id `id` at its entry (`exit` false) or exit, with CUPTI's parameter struct
/// `p`, the call's correlation word `corr` (null when CUPTI gave none) and, at exit, its result.
/// Called with the guard held.
///
/// # Safety
/// `p` is the parameter struct CUPTI passed for a call of id `id` (see the module note); `corr` is
/// null or CUPTI's correlation word for this call.
pub unsafe fn on_call(id: u32, exit: bool, p: *const u8, corr: *mut u64, result: i32) {
    let Some(k) = kind(id) else { return };
    if p.is_null() {
        return;
    }
    if !exit {
        match k {
            // SAFETY: the first argument of every free in the table is the address or handle.
            Kind::Free(api, mem) => free(api, mem, unsafe { arg(p, 0) }),
            Kind::Copy(..) | Kind::Shaped(..) if !corr.is_null() => {
                // SAFETY: CUPTI's word for this call, carried from entry to exit.
                unsafe { corr.write(clock::monotonic_ns()) }
            }
            _ => {}
        }
        return;
    }
    let ok = result == 0;
    match k {
        Kind::Alloc(api, mem, out, bytes) => {
            // SAFETY: the table's offsets for this call; the pitch's out-pointer only after success.
            let size = unsafe {
                match bytes {
                    Bytes::Arg(off) => arg(p, off),
                    Bytes::Pitched if ok => through(p, 8).wrapping_mul(arg(p, 24)),
                    Bytes::Pitched => arg(p, 16).wrapping_mul(arg(p, 24)),
                }
            };
            if !ok {
                failure(api, size, result);
                return;
            }
            // SAFETY: as above; the call succeeded, so the driver wrote the address.
            let addr = unsafe {
                match out {
                    Out::Through(off) => through(p, off),
                    Out::Arg(off) => arg(p, off),
                }
            };
            alloc(api, mem, addr, size);
        }
        Kind::MemInfo if ok => {
            // SAFETY: cuMemGetInfo's two out-pointers, written on success.
            let (free_bytes, total) = unsafe { (through(p, 0), through(p, 8)) };
            mem_info(free_bytes, total);
        }
        Kind::Copy(api, src, moved, stream) => {
            // SAFETY: the table's offsets for this call.
            let (dst, src, size, stream) = unsafe {
                let size = match moved {
                    Moved::Arg(off, elem) => arg(p, off).wrapping_mul(elem),
                    Moved::Rows(w, h, elem) => arg(p, w).wrapping_mul(arg(p, h)).wrapping_mul(elem),
                };
                (
                    arg(p, 0),
                    src.map_or(0, |o| arg(p, o)),
                    size,
                    stream.map_or(0, |o| arg(p, o)),
                )
            };
            timed(api, dst, src, size, stream, corr, result);
        }
        Kind::Shaped(layout, is_async) => {
            // SAFETY: the descriptor's address is the first argument; the driver has just read it.
            let Some(s) = (unsafe { shape::read(arg(p, 0) as *const u8, layout) }) else {
                return;
            };
            // SAFETY: the stream is the second argument of the asynchronous forms.
            let stream = if is_async { unsafe { arg(p, 8) } } else { 0 };
            timed(s.api(is_async), s.dst, s.src, s.size, stream, corr, result);
        }
        _ => {}
    }
}

/// Records a copy that started when its entry wrote `corr` and ends now.
fn timed(api: C, dst: u64, src: u64, size: u64, stream: u64, corr: *mut u64, result: i32) {
    let t1 = clock::monotonic_ns();
    let t0 = if corr.is_null() {
        t1
    } else {
        // SAFETY: CUPTI's word for this call (see `on_call`).
        unsafe { corr.read() }
    };
    // A call that entered before the subscription has no start: it is recorded as taking no time.
    let t0 = if t0 == 0 || t0 > t1 { t1 } else { t0 };
    copy(api, dst, src, size, stream, t0, t1 - t0, result, None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_is_listed_once() {
        let mut ids: Vec<u32> = ids().collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }

    #[test]
    fn the_brief_families_are_all_there() {
        for id in [
            243, 245, 276, 277, 278, 279, 280, 305, 306, 371, 39, 294, 38, 301, 302, 379, 549, 551,
            552, 550, 547, 598, 600, 611, 287, 290, 318, 319,
        ] {
            assert!(kind(id).is_some(), "callback id {id}");
        }
    }
}
