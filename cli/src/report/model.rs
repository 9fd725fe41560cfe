//! The report model. Serialising it with serde gives the JSON contract.
use serde::Serialize;

/// The schema name and major version.
pub const SCHEMA: &str = "memshim.report/1";

/// A whole report: one entry per traced process.
#[derive(Serialize, Debug)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The processes, by start time.
    pub processes: Vec<Process>,
}

/// One traced process.
#[derive(Serialize, Debug)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub exe: String,
    pub argv: Vec<String>,
    pub hostname: String,
    pub trace: String,
    pub start_unix_ns: u64,
    pub duration_s: f64,
    pub forked: bool,
    pub truncated: bool,
    /// "exit", "quick_exit", "exec", "failure", or null when the trace has no end.
    pub end: Option<&'static str>,
    pub dropped_events: u64,
    pub notes: Vec<String>,
    pub heap: HeapSummary,
    pub leaks: Leaks,
}

/// Heap totals over the run.
#[derive(Serialize, Debug)]
pub struct HeapSummary {
    pub allocations: u64,
    pub frees: u64,
    pub allocated_bytes: u64,
    pub peak_bytes: u64,
    pub peak_time_s: f64,
    pub live_bytes: u64,
    pub live_count: u64,
    pub temporary_allocations: u64,
}

/// Memory still held at the end, by kind.
#[derive(Serialize, Debug)]
pub struct Leaks {
    /// Host heap blocks.
    pub host: LeakClass,
    /// Anonymous mappings.
    pub mmap: LeakClass,
    /// Device memory (recorded by the CUDA hooks; empty without them).
    pub device: LeakClass,
}

/// Leaks of one kind.
#[derive(Serialize, Debug, Default)]
pub struct LeakClass {
    pub bytes: u64,
    pub count: u64,
    pub sites: Vec<Site>,
}

/// One call site: a distinct stack.
#[derive(Serialize, Debug)]
pub struct Site {
    /// Bytes still live from here.
    pub bytes: u64,
    /// Blocks still live from here.
    pub count: u64,
    /// Blocks allocated here over the run.
    pub allocations: u64,
    /// Bytes allocated here over the run.
    pub allocated_bytes: u64,
    /// The stack, innermost first.
    pub frames: Vec<FrameOut>,
}

/// One frame.
#[derive(Serialize, Debug, Clone)]
pub struct FrameOut {
    /// "native" (or "python" for interpreter frames).
    pub kind: &'static str,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub module: Option<String>,
    /// The return address, as hex.
    pub address: String,
}
