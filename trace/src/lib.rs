//! The memshim trace format: the contract between the shim that records and the CLI that reports.
//!
//! A trace file is a [`Header`] behind a magic and a format version, then a stream of self-delimiting
//! frames. Each frame holds a batch of [`Event`]s, encoded with bincode (varints, times as deltas within
//! the frame), optionally zstd-compressed, and protected by a CRC-32. Frames are written whole, so a
//! process killed mid-run leaves at worst a torn last frame, which the [`TraceReader`] treats as the
//! normal end of a truncated trace.
//!
//! This crate does no I/O of its own: it writes to any [`std::io::Write`] and reads from any
//! [`std::io::Read`]. It has no `unsafe` code and depends on neither the shim nor the CLI.
//!
//! Since format version 8 every frame carries its number in the trace, so that a reader skips a
//! duplicated frame instead of counting it twice and reports a gap as lost frames.
//!
//! Compatibility: the format is versioned by [`FORMAT_VERSION`]. Changes are additive (new record kinds
//! and fields bump the version); the reader reads every version up to its own and rejects a newer one
//! with an error that names both.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod brancher;
mod columns;
mod delta;
mod error;
mod frame;
pub mod fuzz_entry;
pub mod fuzz_mutate;
mod header;
mod hot;
mod reader;
mod record;
mod serial_table;
mod serials;
mod stack_tree;
mod writer;

pub use brancher::StackBrancher;
pub use error::Error;
pub use frame::{MAX_FRAME_LEN, MAX_RECORD_BYTES};
pub use header::{Clock, Header, FORMAT_VERSION, MAGIC};
pub use reader::{Resume, TraceReader};
pub use record::{
    Alloc, AllocCpu, AllocFn, Attached, AttachedCuda, CopyApi, CopyTime, Counter, CudaApi,
    CudaFailure, CuptiState, DeviceAlloc, DeviceAtAttach, DeviceFree, DeviceMemory, End, EndReason,
    Event, FrameRef, Free, FreeBack, GpuInfo, GpuSample, HeapStats, HeapTotals, ManagedHint, Map,
    MapFn, MemInfo, Module, ModuleUnload, Note, NumaCall, NumaFn, NumaNode, Placement, PyCode,
    PyString, PythonRuntime, RankInfo, ReallocFailed, Record, Segment, StackBranch, StackDef,
    SymFrame, Symbol, ThreadCpu, TimedCopy, TorchAction, TorchEvent, TorchOom, TorchState,
    Transfer, UmCounter, Unmap, Usable, PYTHON_FRAME, UNSAMPLED,
};
pub use stack_tree::{Frames, StackTree, MAX_FRAMES as MAX_STACK_TREE_FRAMES};
pub use writer::TraceWriter;

/// The file extension of memshim traces, without the dot.
pub const FILE_EXTENSION: &str = "mshim";

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_frames;
#[cfg(test)]
mod tests_golden;
