//! Host memory records: the malloc family and anonymous mappings.
use serde::{Deserialize, Serialize};

/// The stack id of an allocation whose stack was not sampled.
pub const UNSAMPLED: u32 = u32::MAX;

/// Which allocation function was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AllocFn {
    /// `malloc`.
    Malloc,
    /// `calloc`.
    Calloc,
    /// `realloc` (the new block).
    Realloc,
    /// `reallocarray` (the new block).
    Reallocarray,
    /// `posix_memalign`.
    PosixMemalign,
    /// `aligned_alloc`.
    AlignedAlloc,
    /// `memalign`.
    Memalign,
    /// `valloc`.
    Valloc,
    /// `pvalloc`.
    Pvalloc,
}

/// A host heap allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alloc {
    /// The function called.
    pub func: AllocFn,
    /// The address returned.
    pub addr: u64,
    /// The size requested, in bytes.
    pub size: u64,
    /// The stack id of the call.
    pub stack: u32,
}

/// A host heap free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Free {
    /// The address freed.
    pub addr: u64,
    /// True when this is the free half of a realloc.
    pub realloc: bool,
}

/// A failed realloc: the block at `addr` stays live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReallocFailed {
    /// The old block's address.
    pub addr: u64,
}

/// Which mapping call created a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MapFn {
    /// `mmap` (or `mmap64`).
    Mmap,
    /// `mremap` (the new range).
    Mremap,
}

/// An anonymous mapping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Map {
    /// The function called.
    pub func: MapFn,
    /// Start of the range.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_*` bits.
    pub flags: u32,
    /// The stack id of the call.
    pub stack: u32,
}

/// An unmapped range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmap {
    /// Start of the range.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}
