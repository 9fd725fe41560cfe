//! The trace preamble: magic, format version and the [`Header`] that describes the traced process.
use serde::{Deserialize, Serialize};

/// The first eight bytes of every trace.
pub const MAGIC: [u8; 8] = *b"MEMSHIM\0";

/// The format version this crate writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 12;

/// Which clock the event times are read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Clock {
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    Monotonic,
}

/// What the trace says about the process that wrote it. Holds no environment variables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// The executable's path as the kernel reports it.
    pub exe: String,
    /// The command line.
    pub argv: Vec<String>,
    /// The host's name.
    pub hostname: String,
    /// Wall-clock time of the trace's start, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// The clock that event times come from.
    pub clock: Clock,
    /// That clock's reading at the trace's start; event times are on the same clock.
    pub clock_start_ns: u64,
    /// The system page size in bytes.
    pub page_size: u64,
    /// The version of the shim that wrote the trace.
    pub shim_version: String,
    /// The most frames the shim kept of each stack.
    pub stack_depth: u32,
    /// True when this process is a fork child whose parent was traced.
    pub forked: bool,
}
