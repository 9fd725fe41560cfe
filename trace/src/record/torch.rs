//! PyTorch's CUDA caching allocator, seen from the inside: its own block and segment events and
//! its out-of-memory reports. Since version 8.
//!
//! These are a layer above the driver's records, never beside them: a segment the allocator
//! reserves is also a driver allocation ([`super::DeviceAlloc`]), and a block is a part of a segment.
//! Readers count reserved memory from the segments and allocated memory from the live blocks, and
//! never add either to the driver's totals.
use serde::{Deserialize, Serialize};

/// What the allocator did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TorchAction {
    /// A block was handed out (a tensor's storage).
    Alloc,
    /// The program let go of a block; it may stay in use on other streams.
    FreeRequested,
    /// The block is back in the cache: from here it counts as free.
    FreeCompleted,
    /// The allocator reserved a segment from the driver.
    SegmentAlloc,
    /// The allocator gave a segment back to the driver.
    SegmentFree,
    /// Expandable segments: physical memory was mapped into a segment.
    SegmentMap,
    /// Expandable segments: part of a segment was unmapped.
    SegmentUnmap,
    /// The allocator raised an out-of-memory error (`addr` is the driver's free bytes).
    Oom,
    /// Not the allocator's: the Python interpreter had begun to shut down at this event (sent once,
    /// just before it). Blocks freed from here are the exit's teardown of module globals, so what
    /// was live here is what the program held at its end.
    PythonExit,
}

/// One event of the allocator, recorded on the thread that caused it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchEvent {
    /// What happened.
    pub action: TorchAction,
    /// The CUDA device ordinal.
    pub device: i32,
    /// The block's or segment's address (for `Oom`, the driver's free bytes).
    pub addr: u64,
    /// Bytes: a block's requested size, a segment's size, or the request that failed.
    pub size: u64,
    /// The CUDA stream the memory belongs to.
    pub stream: u64,
    /// The stack id of the call (0 for frees, which carry no stack).
    pub stack: u32,
}

/// The allocator's figures when it raised an out-of-memory error (from its out-of-memory observer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchOom {
    /// The CUDA device ordinal.
    pub device: i32,
    /// The bytes asked for, as the allocator rounded them.
    pub requested: u64,
    /// The device's memory, or the allowed share of it when a memory fraction is set.
    pub device_total: u64,
    /// The memory the driver said was free.
    pub device_free: u64,
    /// The largest free block in the allocator's cache, when it could be asked.
    pub largest_free: Option<u64>,
    /// The stack id of the call.
    pub stack: u32,
}

/// Whether the allocator's events are recorded, and why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchState {
    /// True once the hooks are attached.
    pub enabled: bool,
    /// The PyTorch version found (`2.11.0+cu130`), empty when it could not be read.
    pub version: String,
    /// The allocator backend (`native`, `cudaMallocAsync`), empty when unknown.
    pub backend: String,
    /// What was done, or why the allocator is seen at the driver level only.
    pub detail: String,
}
