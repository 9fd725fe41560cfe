//! What producers hand the writer thread over the channel: fixed-size, plain data, stacks by hash.
use crossbeam_channel::Sender;
use memshim_trace::{AllocFn, EndReason, MapFn, Module, Record};

/// One message to the writer.
pub enum Msg {
    /// A heap allocation; `stack` is a stack hash.
    Alloc {
        t: u64,
        tid: u32,
        func: AllocFn,
        addr: u64,
        size: u64,
        stack: u64,
    },
    /// A heap free, sent before the real free.
    Free {
        t: u64,
        tid: u32,
        addr: u64,
        realloc: bool,
    },
    /// A realloc failed after its free half was sent.
    ReallocFailed { t: u64, tid: u32, addr: u64 },
    /// An anonymous mapping.
    Map {
        t: u64,
        tid: u32,
        func: MapFn,
        addr: u64,
        len: u64,
        prot: u32,
        flags: u32,
        stack: u64,
    },
    /// An unmapped range, sent before the real munmap.
    Unmap {
        t: u64,
        tid: u32,
        addr: u64,
        len: u64,
    },
    /// The frames of a stack hash seen for the first time.
    Stack { hash: u64, frames: Box<[u64]> },
    /// A record written as it is, with no thread and the current time (samples, counters).
    Record(Record),
    /// The module map changed; this is the whole new map.
    Modules(Vec<Module>),
    /// A record with a stack (CUDA, NUMA calls); the writer fills its stack field in from `stack`.
    Stacked(Box<StackedMsg>),
    /// A Python code object seen for the first time: its id, names and first line.
    PyCode(Box<PyCodeMsg>),
    /// Close the trace and acknowledge when it is on disk.
    Shutdown { reason: EndReason, ack: Sender<()> },
    /// Put everything sent before this on disk now, then say so in `channel::FLUSHED` (the
    /// program asked, through `memshim_flush`).
    Flush(u64),
    /// As `Flush`, then take the trace's room before the program limits the size of its files to
    /// `limit` bytes (see `writer::output`).
    SizeLimit { seq: u64, limit: u64 },
}

/// A record with a stack (boxed: rarer and larger than heap events, it must not grow every message).
pub struct StackedMsg {
    pub t: u64,
    pub tid: u32,
    /// The stack hash for records that carry a stack.
    pub stack: Option<u64>,
    pub record: Record,
}

/// A Python code object's names, read in the thread whose frame ran it.
pub struct PyCodeMsg {
    pub id: u32,
    pub name: Box<str>,
    pub file: Box<str>,
    pub first_line: u32,
}
