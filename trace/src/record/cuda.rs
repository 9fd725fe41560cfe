//! CUDA driver records: allocations of every kind, failures, memory queries, hints and copies.
use serde::{Deserialize, Serialize};

/// The CUDA driver call that was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CudaApi {
    /// `cuMemAlloc`.
    MemAlloc,
    /// `cuMemAllocPitch`.
    MemAllocPitch,
    /// `cuMemAllocManaged`.
    MemAllocManaged,
    /// `cuMemAllocAsync`.
    MemAllocAsync,
    /// `cuMemAllocFromPoolAsync`.
    MemAllocFromPoolAsync,
    /// `cuMemFree`.
    MemFree,
    /// `cuMemFreeAsync`.
    MemFreeAsync,
    /// `cuMemHostAlloc`.
    MemHostAlloc,
    /// `cuMemAllocHost`.
    MemAllocHost,
    /// `cuMemFreeHost`.
    MemFreeHost,
    /// `cuMemHostRegister`.
    MemHostRegister,
    /// `cuMemHostUnregister`.
    MemHostUnregister,
    /// `cuMemAddressReserve`.
    MemAddressReserve,
    /// `cuMemAddressFree`.
    MemAddressFree,
    /// `cuMemCreate`.
    MemCreate,
    /// `cuMemRelease`.
    MemRelease,
    /// `cuMemMap`.
    MemMap,
    /// `cuMemUnmap`.
    MemUnmap,
    /// `cuMemPrefetchAsync`.
    MemPrefetchAsync,
    /// `cuMemAdvise`.
    MemAdvise,
    /// `cuMemGetInfo`.
    MemGetInfo,
}

/// What kind of memory a CUDA allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DeviceMemory {
    /// Device memory (`cuMemAlloc*`, async and pool allocations).
    Device,
    /// Unified (managed) memory.
    Managed,
    /// Page-locked host memory allocated by CUDA.
    PinnedHost,
    /// Host memory the program allocated and pinned with `cuMemHostRegister`.
    Registered,
    /// Reserved virtual address space (`cuMemAddressReserve`): no memory behind it by itself.
    Reserved,
    /// Physical memory of the virtual-memory API (`cuMemCreate`); `addr` is its handle.
    Physical,
    /// A physical allocation mapped into reserved space (`cuMemMap`); `addr` is the mapped address.
    Mapped,
}

/// A successful CUDA allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceAlloc {
    /// The call.
    pub api: CudaApi,
    /// The kind of memory.
    pub kind: DeviceMemory,
    /// The address (or, for physical memory, the handle).
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// A CUDA release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFree {
    /// The call.
    pub api: CudaApi,
    /// The kind of memory released.
    pub kind: DeviceMemory,
    /// The address (or handle) released.
    pub addr: u64,
}

/// A failed CUDA memory call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaFailure {
    /// The call.
    pub api: CudaApi,
    /// The bytes it asked for (0 when it asked for none).
    pub size: u64,
    /// The `CUresult` it returned.
    pub result: i32,
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// A `cuMemGetInfo` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInfo {
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// Free bytes.
    pub free: u64,
    /// Total bytes.
    pub total: u64,
}

/// A unified-memory prefetch or advice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedHint {
    /// `MemPrefetchAsync` or `MemAdvise`.
    pub api: CudaApi,
    /// Start of the range.
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// The destination device (prefetch) or the advice value (advise).
    pub value: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// Which copy call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyApi {
    /// `cuMemcpy` (unified addressing: direction from the addresses).
    Memcpy,
    /// `cuMemcpyAsync` (unified addressing).
    MemcpyAsync,
    /// `cuMemcpyHtoD`.
    MemcpyHtoD,
    /// `cuMemcpyDtoH`.
    MemcpyDtoH,
    /// `cuMemcpyDtoD`.
    MemcpyDtoD,
    /// `cuMemcpyHtoDAsync`.
    MemcpyHtoDAsync,
    /// `cuMemcpyDtoHAsync`.
    MemcpyDtoHAsync,
    /// `cuMemcpyDtoDAsync`.
    MemcpyDtoDAsync,
    /// `cuMemcpyPeer`: device to device across contexts (GPUs). Since version 3.
    MemcpyPeer,
    /// `cuMemcpyPeerAsync`. Since version 3.
    MemcpyPeerAsync,
    /// `cuMemsetD8/D16/D32` (`src` is 0, `size` the bytes set). Since version 3.
    Memset,
    /// `cuMemsetD8/D16/D32Async`. Since version 3.
    MemsetAsync,
}

// 2D and 3D copies (`cuMemcpy2D*`, `cuMemcpy3D*`) are recorded as the 1D call of their direction
// (from their memory types: HtoD, DtoH, DtoD, or `Memcpy` when unified addressing decides), with the
// address of the first byte copied on each side (0 for a CUDA array) and `size` = width x height x
// depth.

impl CopyApi {
    /// True for the calls that return before the copy is done (when the host memory allows it).
    pub fn is_async(self) -> bool {
        matches!(
            self,
            CopyApi::MemcpyAsync
                | CopyApi::MemcpyHtoDAsync
                | CopyApi::MemcpyDtoHAsync
                | CopyApi::MemcpyDtoDAsync
                | CopyApi::MemcpyPeerAsync
                | CopyApi::MemsetAsync
        )
    }
}

/// A copy through the driver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// The call.
    pub api: CopyApi,
    /// Destination address.
    pub dst: u64,
    /// Source address.
    pub src: u64,
    /// Bytes.
    pub size: u64,
    /// The stream (0 for the default stream and for synchronous calls).
    pub stream: u64,
    /// How long the call took, in nanoseconds: the transfer for synchronous calls, the time the
    /// caller was blocked for asynchronous ones.
    pub duration_ns: u64,
    /// The `CUresult` it returned.
    pub result: i32,
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// An asynchronous copy the shim timed on the GPU: two events recorded on its stream, one before
/// and one after the copy, read later by a helper thread (never synchronising the program's
/// streams). Since version 5.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedCopy {
    /// The copy, as [`Record::Copy`](super::Record::Copy) would have recorded it.
    pub copy: Transfer,
    /// Names the [`CopyTime`] that says how long it ran; unique within the process.
    pub timer: u32,
}

/// The GPU time of an event-timed copy: between the events recorded around it on its stream. It
/// comes after its [`TimedCopy`], possibly much later; a copy still in flight when the process ended
/// has none. Since version 5.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyTime {
    /// The [`TimedCopy::timer`] it belongs to.
    pub timer: u32,
    /// Nanoseconds between the two events (the resolution of `cuEventElapsedTime`, about 0.5 µs).
    pub gpu_ns: u64,
}

/// The state of CUPTI's unified-memory counters (`MEMSHIM_CUPTI=1`). Since version 5.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CuptiState {
    /// True once the counters are enabled.
    pub enabled: bool,
    /// The library used, or what went wrong (not found, another tool holds CUPTI, not supported).
    pub detail: String,
}

/// Unified-memory activity of one kind between two places, in one 2 MiB region of managed memory,
/// summed over CUPTI's records. Since version 5.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UmCounter {
    /// CUPTI's counter kind: 1 bytes host to device, 2 bytes device to host, 3 CPU page faults,
    /// 4 GPU page-fault groups, 5 thrashing, 6 throttling, 7 remote maps, 8 bytes device to device.
    pub kind: u32,
    /// Source (a device id; CPU transfers name the CPU side as CUPTI does).
    pub src: u32,
    /// Destination, likewise.
    pub dst: u32,
    /// The lowest address CUPTI named in the region (the region is `address >> 21`).
    pub address: u64,
    /// CUPTI records summed.
    pub records: u64,
    /// Their values: bytes for transfers, faults for page faults, events for the others.
    pub value: u64,
}

/// Attached to a process that had the CUDA driver loaded (`memshim attach`): whether the driver's
/// memory calls and copies after attach are seen (through CUPTI's driver-API callbacks: the CUDA
/// runtime fetched the driver's entry points long before, past the shim), and the device memory
/// already in use then. Since version 11.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachedCuda {
    /// True when CUPTI's callbacks deliver the memory calls and copies made after attach.
    pub seen: bool,
    /// The CUPTI library used, or precisely why the calls are not seen (no libcupti found, another
    /// tool holds CUPTI's callbacks, a CUPTI too old).
    pub detail: String,
    /// Device memory in use on each GPU at attach.
    pub devices: Vec<DeviceAtAttach>,
}

/// One GPU's memory at attach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceAtAttach {
    /// Device ordinal.
    pub device: i32,
    /// Bytes in use on the whole device (`cuMemGetInfo`: total less free, every process's), 0 when
    /// the driver could not be asked (no active context on the device).
    pub used_bytes: u64,
    /// The device's memory.
    pub total_bytes: u64,
    /// Bytes this process uses on the device, as NVML counts them, when NVML says.
    pub process_bytes: Option<u64>,
}
