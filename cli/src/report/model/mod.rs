//! The report model. Serialising it with serde gives the JSON contract.
use serde::Serialize;

mod device;
mod first_screen;
mod flame;
pub mod frame;
pub mod frame_table;
mod growth;
mod site;
mod system;
mod torch;
mod torch_steps;
mod transfers;

pub use device::*;
pub use first_screen::*;
pub use flame::*;
pub use frame::FrameOut;
pub use growth::*;
pub use site::*;
pub use system::*;
pub use torch::*;
pub use torch_steps::*;
pub use transfers::*;

/// The schema name and major version.
pub const SCHEMA: &str = "memshim.report/2";

/// A whole report: one entry per traced process.
#[derive(Serialize, Debug)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The processes, by start time.
    pub processes: Vec<Process>,
    /// The ranks of a distributed job side by side; null when no process was a rank.
    pub ranks: Option<RanksSection>,
    /// Trace files that could not be read at all (empty, not a trace, header damaged), with why;
    /// the other traces are reported.
    pub unreadable: Vec<Unreadable>,
    /// The few things worth acting on, over all processes, most at stake first (see
    /// `report::verdict`); empty when there is nothing to act on.
    pub verdict: Vec<Verdict>,
    /// Notes about the machine or the measurement (one NUMA node, counters not available), each
    /// once: the texts of the findings of severity "info", which stay in their sections too.
    pub notes: Vec<String>,
    /// Totals over the processes reported.
    pub totals: Totals,
}

/// Sums over every process of the report.
#[derive(Serialize, Debug, Default)]
pub struct Totals {
    pub processes: u64,
    /// Host program leaks (the CUDA driver's own left out).
    pub leaked_host_bytes: u64,
    /// The highest any one process held (see [`ProgramMemory::bytes`]).
    pub peak_program_bytes: u64,
    /// Of each process's peak program memory, summed: an upper bound for them all at once.
    pub sum_peak_program_bytes: u64,
    pub allocations: u64,
}

/// A trace file left out of the report.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub trace: String,
    pub why: String,
}

/// The ranks of a distributed job.
#[derive(Serialize, Debug)]
pub struct RanksSection {
    /// One row per rank process (not its forked workers), by host and rank.
    pub rows: Vec<RankRow>,
    /// Where ranks differ enough to matter.
    pub findings: Vec<Finding>,
}

/// One rank's figures.
#[derive(Serialize, Debug)]
pub struct RankRow {
    pub host: String,
    pub rank: u32,
    pub local_rank: Option<u32>,
    pub pid: u32,
    pub peak_device_bytes: u64,
    pub leaked_device_bytes: u64,
    pub leaked_host_bytes: u64,
    /// Host and device sites that kept growing.
    pub growing_sites: u64,
    pub htod_bytes: u64,
    pub dtoh_bytes: u64,
    pub dtod_bytes: u64,
    /// Time the synchronous copies took and the asynchronous ones blocked their callers.
    pub transfer_seconds: f64,
}

/// A process's rank in a distributed job.
#[derive(Serialize, Debug, Clone)]
pub struct RankOut {
    pub rank: u32,
    pub local_rank: Option<u32>,
    pub world_size: Option<u32>,
    /// `torchrun`, `env`, `openmpi`, `pmi` or `slurm`.
    pub launcher: String,
}

/// One traced process.
#[derive(Serialize, Debug)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub exe: String,
    pub argv: Vec<String>,
    /// The command by which the report names it: the program's file name and its first argument
    /// that is not an option (`git pack-objects`, `python3 train.py`).
    pub command: String,
    pub hostname: String,
    pub trace: String,
    pub start_unix_ns: u64,
    pub duration_s: f64,
    pub forked: bool,
    pub truncated: bool,
    /// True when the trace has no end because its process is still running (see `live_writer`):
    /// the figures are what it had written so far, not a crash.
    pub still_writing: bool,
    /// "exit", "quick_exit", "exec", "failure", "signal", "detached", or null when the trace has no
    /// end.
    pub end: Option<&'static str>,
    /// Set when `memshim attach` loaded the shim into the running process: how long it had run
    /// then, in seconds. The trace (and every time in the report) starts at that moment.
    pub attached_after_s: Option<f64>,
    /// With `end` "signal": which one (`SIGSEGV`, ...). The shim's handler wrote the trace whole,
    /// then the signal took its default action.
    pub end_signal: Option<String>,
    pub dropped_events: u64,
    /// Frames missing between the ones read (the shim could not write them: a full disk, a file-size
    /// limit): events in them are not in the figures, and blocks freed in them look live.
    pub missing_frames: u64,
    /// Host stacks were sampled, one per this many bytes on average; null when every stack was taken.
    pub sampling_bytes: Option<u64>,
    /// The CPython interpreter the process ran, if any.
    pub python: Option<PythonOut>,
    /// Its rank, when it was one in a distributed job.
    pub rank: Option<RankOut>,
    /// What it is: `main`, `child`, `fork child`, `rank N`, `DataLoader worker [of rank N]`.
    pub role: String,
    /// How many items of the report's `verdict` are about this process.
    pub verdict_items: u64,
    pub notes: Vec<String>,
    /// What it held at its highest: heap, allocator arenas and device memory, with RSS beside.
    pub program_memory: ProgramMemory,
    pub heap: HeapSummary,
    /// The host heap as flame graphs (see `report::flame`).
    pub flame: FlameSection,
    pub leaks: Leaks,
    pub growth: GrowthSection,
    pub device: DeviceSection,
    /// PyTorch's caching allocator, from the inside.
    pub torch: TorchSection,
    pub transfers: TransfersSection,
    pub timeline: Timeline,
    pub numa: NumaSection,
    pub counters: CountersSection,
    pub fragmentation: FragmentationSection,
}

impl Process {
    /// True when the trace ended because `memshim attach` detached: the process went on, so what
    /// was live then is held, not leaked.
    pub fn detached(&self) -> bool {
        self.end == Some("detached")
    }

    /// The heading of `memory` still live at the trace's end: "leaked heap", or "heap held at
    /// detach" for a process that went on after the trace ended.
    pub fn leak_title(&self, memory: &str) -> String {
        if self.detached() {
            format!("{memory} held at detach")
        } else {
            format!("leaked {memory}")
        }
    }
}

/// The Python interpreter of a process and whether its frames are in the stacks.
#[derive(Serialize, Debug)]
pub struct PythonOut {
    pub version: String,
    pub frames: bool,
    /// Why not, when `frames` is false.
    pub reason: Option<String>,
}

/// Memory over time, downsampled to at most 2048 points each (the largest value of each interval).
#[derive(Serialize, Debug, Default)]
pub struct Timeline {
    /// [seconds since start, live host heap bytes].
    pub host_live: Vec<(f64, u64)>,
    /// [seconds since start, live device bytes, all GPUs].
    pub device_live: Vec<(f64, u64)>,
    /// Copy bandwidth over time, one series per kind of copy: bytes moved per second in each of up
    /// to 200 equal intervals of the copying period.
    pub transfers: Vec<BandwidthSeries>,
}

/// Heap totals over the run.
#[derive(Serialize, Debug)]
pub struct HeapSummary {
    /// "events": every allocation and free was recorded; "counts": only sampled allocations were
    /// (thin sampling), and these totals are the shim's counts, with live and peak bytes as usable
    /// sizes, the peak from readings about every 100 ms, and temporary allocations not known (0).
    pub totals_from: &'static str,
    /// What a reader of these totals must know about how they were made: with "counts", a sentence
    /// saying so; null with "events".
    pub totals_note: Option<&'static str>,
    pub allocations: u64,
    pub frees: u64,
    pub allocated_bytes: u64,
    pub peak_bytes: u64,
    pub peak_time_s: f64,
    pub live_bytes: u64,
    pub live_count: u64,
    pub temporary_allocations: u64,
    /// Frees of blocks whose allocation the trace never saw (made before tracing began, or out of
    /// the shim's view); they change no other figure.
    pub unknown_frees: u64,
    /// The sites that held the most when the peak was reached (`bytes`/`count`: what they held
    /// then), at most [`PEAK_SITES`], largest first: the flame graph at the peak.
    pub peak_sites: Vec<Site>,
    /// The moment `peak_sites` are of: the peak itself, except under thin sampling when a reading
    /// of the counts was higher than the sampled blocks ever were (the sites are then the sampled
    /// blocks' own peak, when they held `peak_sites_bytes`).
    pub peak_sites_bytes: u64,
    pub peak_sites_time_s: f64,
}

impl HeapSummary {
    /// True when `peak_sites` are of another moment than the peak (see `peak_sites_time_s`).
    pub fn peak_sites_elsewhere(&self) -> bool {
        self.peak_sites_bytes != self.peak_bytes || self.peak_sites_time_s != self.peak_time_s
    }
}

/// Sites kept for the peak's picture.
pub const PEAK_SITES: usize = 100;

/// Memory still held at the end, by kind.
#[derive(Serialize, Debug)]
pub struct Leaks {
    /// Host heap blocks.
    pub host: LeakClass,
    /// Anonymous mappings.
    pub mmap: LeakClass,
    /// Device memory (`cuMemAlloc*`, async and pool allocations, and `cuMemCreate` physical memory).
    pub device: LeakClass,
    /// Unified (managed) memory.
    pub managed: LeakClass,
    /// Page-locked host memory allocated by CUDA.
    pub pinned: LeakClass,
    /// Host memory still registered (pinned) with `cuMemHostRegister`.
    pub registered: LeakClass,
}
