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

/// A free stored by distance (see `serials`): the block allocated `back` allocations before the next
/// one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreeBack {
    /// The number of allocations since the freed one (1: the latest).
    pub back: u64,
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

/// The usable size of a sampled block (`malloc_usable_size`), sent right after its [`Alloc`] when
/// only sampled allocations are recorded: the chance it was sampled depends on this size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usable {
    /// The block's address.
    pub addr: u64,
    /// Its usable size in bytes.
    pub usable: u64,
}

/// Every host allocation and free the shim saw so far, counted in the process (running totals) when
/// only sampled allocations are recorded as events.
///
/// Live bytes are counted as the allocator counts them (`malloc_usable_size`), since a free does not
/// say how much was asked for. The counts go on across a fork: a fork child's first totals hold what
/// it inherited.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapTotals {
    /// Allocations (a realloc counts as a free and an allocation).
    pub allocations: u64,
    /// Frees.
    pub frees: u64,
    /// Bytes asked for by all allocations.
    pub allocated_bytes: u64,
    /// Usable bytes of all allocations.
    pub allocated_usable: u64,
    /// Usable bytes of all frees.
    pub freed_usable: u64,
}

impl HeapTotals {
    /// Blocks live now.
    pub fn live_count(&self) -> u64 {
        self.allocations.saturating_sub(self.frees)
    }

    /// Usable bytes live now.
    pub fn live_usable(&self) -> u64 {
        self.allocated_usable.saturating_sub(self.freed_usable)
    }
}
