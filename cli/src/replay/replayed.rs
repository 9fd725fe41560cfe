//! What replaying one trace produces: the header, how it ended, the analyses' state, stacks, modules,
//! names and notes, with the bounds on what is kept. Filled by `apply`; read by the report.
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;

use memshim_trace::{
    Counter, End, Header, Module, NumaCall, NumaNode, PyCode, PythonRuntime, RankInfo, SymFrame,
};

use super::frame_damage::FrameDamage;
use crate::analysis::fragmentation::Fragmentation;
use crate::analysis::{device::Device, heap::Heap, mmap::Mappings, transfers::Transfers, IdTable};

/// A module as loaded, with when it was loaded and unloaded.
#[derive(Clone, Debug)]
pub struct LoadedModule {
    /// What the shim recorded.
    pub module: Module,
    /// When it was unloaded, if it was.
    pub unloaded_t: Option<u64>,
}

/// Everything one trace says, analysed.
#[derive(Debug)]
pub struct Replayed {
    /// The trace file.
    pub path: PathBuf,
    /// The process header.
    pub header: Header,
    /// The orderly end, if the trace has one.
    pub end: Option<End>,
    /// Set when the shim was attached to the running process (`memshim attach`).
    pub attached: Option<memshim_trace::Attached>,
    /// Attached with the CUDA driver loaded: whether its calls after attach are seen, and the
    /// device memory in use at attach.
    pub attached_cuda: Option<memshim_trace::AttachedCuda>,
    /// True when the trace ends without its End record or with a torn frame.
    pub truncated: bool,
    /// True when it has no end because its writer is still running (see `live_writer`).
    pub still_writing: bool,
    /// Why reading stopped early, when a frame was corrupt.
    pub corrupt: Option<String>,
    /// Events the shim could not record.
    pub dropped: u64,
    /// The shim's notes.
    pub notes: Vec<String>,
    /// Time of the last event (clock ns).
    pub last_t: u64,
    /// Events by record kind.
    pub counts: HashMap<&'static str, u64>,
    /// Stack frames by id, callers shared.
    pub stacks: memshim_trace::StackTree,
    /// Loaded modules, in load order (the first [`MAX_MODULES`]).
    pub modules: Vec<LoadedModule>,
    /// What was left out at the bounds of `notes` and `modules`.
    pub left_out: LeftOut,
    /// In-process symbols by return address.
    pub symbols: HashMap<u64, Vec<SymFrame>>,
    /// The heap analysis.
    pub heap: Heap,
    /// The shim's counts of every heap call, when only sampled allocations were recorded.
    pub heap_totals: Option<crate::analysis::heap_totals::Counted>,
    /// The mapping analysis.
    pub mmap: Mappings,
    /// When heap and anonymous mappings together held the most.
    pub program_peak: crate::analysis::program_peak::ProgramPeak,
    /// The CUDA memory analysis.
    pub device: Device,
    /// The copies.
    pub transfers: Transfers,
    /// PyTorch's caching allocator, from the inside.
    pub torch: crate::analysis::torch::Torch,
    /// Unified-memory activity from CUPTI.
    pub unified: crate::analysis::unified::Unified,
    /// The machine's NUMA nodes.
    pub topology: Vec<NumaNode>,
    /// Heap fragmentation from the C library's statistics.
    pub fragmentation: Fragmentation,
    /// Performance counters at the end.
    pub counters: Vec<Counter>,
    /// Placement and affinity calls, in order (the first `MAX_NUMA_CALLS`).
    pub numa_calls: Vec<(u64, u32, NumaCall)>,
    /// The trace ended in zeros where a frame should start: room the shim set aside past a
    /// file-size limit and never wrote (see [`memshim_trace::TraceReader::unwritten_tail`]).
    pub unwritten_tail: bool,
    /// Bytes of the trace up to the end of its last complete frame (the file is longer when its last
    /// frame is torn).
    pub complete_bytes: u64,
    /// Where its frames end, for appending to it.
    pub resume: Option<memshim_trace::Resume>,
    /// Frames read twice in the file (skipped), missing between others, and heap events left out
    /// because their block was in a missing frame (see [`TraceReader::missing_frames`]).
    pub frame_damage: FrameDamage,
    /// The CPU each large block was allocated on, and when, until its placement is known.
    pub alloc_cpu: HashMap<u64, (u32, u64)>,
    /// Sampled placements of large blocks, with the allocating CPU, the block's stack and its memory
    /// (heap, or pinned or registered host memory).
    pub placements: Vec<SampledBlock>,
    /// The performance counters' totals over time.
    pub counter_series: crate::analysis::counters::CounterSeries,
    /// The CPUs each program thread was seen on (machines with several NUMA nodes).
    pub threads: crate::analysis::numa::Threads,
    /// The last allocations, which date the large ones.
    pub(super) recent_allocs: crate::analysis::numa::RecentAllocs,
    /// Events by record kind while reading (`counts` at the end).
    pub(super) kinds: crate::analysis::kinds::KindCounts,
    /// The Python interpreter the process ran, if any.
    pub python: Option<PythonRuntime>,
    /// The process's rank in a distributed job, if it was one.
    pub rank: Option<RankInfo>,
    /// NVML's view of the GPUs.
    pub gpus: crate::analysis::gpus::Gpus,
    /// Python code objects by id, with their names resolved from the string table.
    pub py_codes: HashMap<u32, PyFunction>,
    /// Stack ids that share their Python frames with a smaller id, mapped to it (one site per
    /// Python location).
    pub py_groups: IdTable<u32>,
    /// Each stack id with Python frames, mapped to its location's number
    /// (`analysis::python_sites::location_keys`).
    pub py_keys: IdTable<u32>,
    /// `--all-frames`: the reports of this trace show every frame (see `report::frame_marks`). Set
    /// by the command after replaying; replay itself never reads it.
    pub all_frames: bool,
    /// The Python script's directory, worked out once by `report::frame_marks`.
    pub script_dir: std::sync::OnceLock<Option<String>>,
    /// The string table, until the code objects that use it are resolved.
    pub(super) py_strings: HashMap<u32, String>,
    /// Code objects whose strings were not defined yet.
    pub(super) py_pending: Vec<PyCode>,
}

pub use crate::analysis::numa::{HostBlock, SampledBlock};

impl Replayed {
    /// Nothing replayed yet, of the trace at `path` whose header is `header`.
    pub(super) fn new(path: &std::path::Path, header: Header) -> Replayed {
        let last_t = header.clock_start_ns;
        Replayed {
            path: path.to_path_buf(),
            header,
            end: None,
            attached: None,
            attached_cuda: None,
            truncated: false,
            still_writing: false,
            corrupt: None,
            dropped: 0,
            notes: Vec::new(),
            last_t,
            counts: HashMap::default(),
            stacks: Default::default(),
            modules: Vec::new(),
            left_out: LeftOut::default(),
            symbols: HashMap::default(),
            heap: {
                // The host heap's freed blocks are what the holes analysis reads.
                let mut heap = Heap::default();
                heap.follow_freed();
                heap
            },
            heap_totals: None,
            mmap: Mappings::default(),
            program_peak: Default::default(),
            device: Device::default(),
            transfers: Transfers::default(),
            torch: Default::default(),
            topology: Vec::new(),
            fragmentation: Fragmentation::default(),
            counters: Vec::new(),
            numa_calls: Vec::new(),
            complete_bytes: 0,
            unwritten_tail: false,
            resume: None,
            frame_damage: FrameDamage::default(),
            alloc_cpu: HashMap::default(),
            placements: Vec::new(),
            counter_series: Default::default(),
            threads: Default::default(),
            recent_allocs: Default::default(),
            kinds: Default::default(),
            python: None,
            rank: None,
            gpus: Default::default(),
            unified: Default::default(),
            py_codes: HashMap::default(),
            py_groups: Default::default(),
            py_keys: Default::default(),
            all_frames: false,
            script_dir: Default::default(),
            py_strings: HashMap::default(),
            py_pending: Vec::new(),
        }
    }
}

impl Replayed {
    /// Live host heap bytes over time: from every event, or with thin sampling from the shim's
    /// counts (the sampled events alone would show only the sampled blocks).
    pub fn host_live(&self) -> &crate::analysis::timeline::Series {
        self.heap_totals
            .as_ref()
            .map_or(&self.heap.series, |c| &c.series)
    }

    /// True when the trace ended with `memshim attach` detaching: the process went on, so what was
    /// live at the end is held, not leaked.
    pub fn detached(&self) -> bool {
        self.end.as_ref().map(|e| e.reason) == Some(memshim_trace::EndReason::Detached)
    }
}

/// A Python function (code object): what a Python frame names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyFunction {
    pub name: String,
    pub file: String,
    pub first_line: u32,
}

/// Placement and affinity calls kept.
pub const MAX_NUMA_CALLS: usize = 10_000;
/// The shim's notes kept (it writes a handful; a damaged or crafted trace could hold millions).
pub const MAX_NOTES: usize = 256;
/// Loaded modules kept (a program that dlopens in a loop loads thousands).
pub const MAX_MODULES: usize = 100_000;

/// Records left out because a list reached its bound.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeftOut {
    pub notes: u64,
    pub modules: u64,
}
