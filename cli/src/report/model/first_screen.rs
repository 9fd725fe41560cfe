//! The model of what a report says first: the verdict over all processes, the notes about the
//! machine said once, and each process's memory at its peak.
use serde::Serialize;

/// One thing worth acting on.
#[derive(Serialize, Debug, Clone)]
pub struct Verdict {
    /// What it is: `leak`, `growth`, `released_growth`, or the kind of the finding it comes from.
    pub kind: &'static str,
    /// As a finding's (see [`super::Finding::severity`]).
    pub severity: &'static str,
    /// The process, and its command as the overview names it.
    pub pid: u32,
    pub program: String,
    /// Its trace (pids repeat along an exec chain; the trace does not).
    pub trace: String,
    /// The bytes at stake, where it is about an amount of memory.
    pub bytes: Option<u64>,
    /// The call site to look at: the first frame of the program's own code.
    pub site: Option<String>,
    /// What happened, with its evidence.
    pub text: String,
    /// What to do about it.
    pub fix: String,
}

/// What the program held at its highest.
#[derive(Serialize, Debug, Default)]
pub struct ProgramMemory {
    /// Heap blocks and anonymous mappings together at their highest, plus device memory at its
    /// peak (the two peaks may be at different moments).
    pub bytes: u64,
    /// The host part: heap and anonymous mappings (allocator arenas, pymalloc's among them) when
    /// their sum was highest, and when (seconds since start).
    pub host_bytes: u64,
    pub heap_bytes: u64,
    pub mapped_bytes: u64,
    pub host_time_s: f64,
    /// Device memory at its peak (all GPUs), and when.
    pub device_bytes: u64,
    pub device_time_s: f64,
    /// The highest resident set size the sampler read (every ~100 ms); null without readings.
    pub rss_peak_bytes: Option<u64>,
}
