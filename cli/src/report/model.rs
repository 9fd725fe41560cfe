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
    /// The ranks of a distributed job side by side; null when no process was a rank.
    pub ranks: Option<RanksSection>,
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
    pub hostname: String,
    pub trace: String,
    pub start_unix_ns: u64,
    pub duration_s: f64,
    pub forked: bool,
    pub truncated: bool,
    /// "exit", "quick_exit", "exec", "failure", or null when the trace has no end.
    pub end: Option<&'static str>,
    pub dropped_events: u64,
    /// Host stacks were sampled, one per this many bytes on average; null when every stack was taken.
    pub sampling_bytes: Option<u64>,
    /// The CPython interpreter the process ran, if any.
    pub python: Option<PythonOut>,
    /// Its rank, when it was one in a distributed job.
    pub rank: Option<RankOut>,
    /// What it is: `main`, `child`, `fork child`, `rank N`, `DataLoader worker [of rank N]`.
    pub role: String,
    pub notes: Vec<String>,
    pub heap: HeapSummary,
    pub leaks: Leaks,
    pub growth: GrowthSection,
    pub device: DeviceSection,
    pub transfers: TransfersSection,
    pub timeline: Timeline,
    pub numa: NumaSection,
    pub counters: CountersSection,
    pub fragmentation: FragmentationSection,
}

/// The Python interpreter of a process and whether its frames are in the stacks.
#[derive(Serialize, Debug)]
pub struct PythonOut {
    pub version: String,
    pub frames: bool,
    /// Why not, when `frames` is false.
    pub reason: Option<String>,
}

/// The machine's NUMA topology and what memshim concludes about placement.
#[derive(Serialize, Debug, Default)]
pub struct NumaSection {
    /// The nodes; empty when the trace does not say.
    pub nodes: Vec<NumaNodeOut>,
    /// Placement and affinity calls, in order.
    pub calls: Vec<NumaCallOut>,
    /// Bytes of the sampled large blocks by the node their pages are on (in proportion to the pages).
    pub bytes_by_node: Vec<NodeBytes>,
    /// The sampled large blocks, largest first.
    pub placements: Vec<PlacementOut>,
    /// The program's threads as sampled about every 100 ms (only on a machine with several nodes),
    /// those that ran on more than one node first.
    pub threads: Vec<NumaThreadOut>,
    pub findings: Vec<Finding>,
}

/// Where one thread ran.
#[derive(Serialize, Debug)]
pub struct NumaThreadOut {
    pub tid: u32,
    /// Its name (`comm`); empty when unknown.
    pub name: String,
    pub samples: u64,
    /// Samples per node: [node, samples].
    pub samples_by_node: Vec<(u32, u64)>,
    /// The CPUs it was seen on.
    pub cpus: Vec<u32>,
    /// True when it ran on more than one node.
    pub migrated: bool,
    pub first_time_s: f64,
    pub last_time_s: f64,
}

/// A placement or affinity call, decoded.
#[derive(Serialize, Debug)]
pub struct NumaCallOut {
    /// mbind, set_mempolicy, migrate_pages, move_pages, sched_setaffinity, pthread_setaffinity_np.
    pub call: &'static str,
    /// MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE, MPOL_LOCAL, ...; null without one.
    pub policy: Option<String>,
    pub nodes: Vec<u32>,
    pub from_nodes: Vec<u32>,
    pub cpus: Vec<u32>,
    /// Bytes of the range (mbind), pages (move_pages), else 0.
    pub bytes: u64,
    /// The process or thread it applies to; 0 for the caller.
    pub target: i64,
    pub flags: u32,
    pub result: i64,
    pub time_s: f64,
    pub thread: u32,
    pub frames: Vec<FrameOut>,
}

/// Bytes on one node.
#[derive(Serialize, Debug)]
pub struct NodeBytes {
    pub node: u32,
    pub bytes: u64,
}

/// Where a large block's pages are, against where its allocating thread ran.
#[derive(Serialize, Debug)]
pub struct PlacementOut {
    /// "heap", or "pinned" / "registered" host memory (which the GPU copies from).
    pub memory: &'static str,
    pub bytes: u64,
    /// Sampled pages per node: [node, pages].
    pub pages_by_node: Vec<(u32, u32)>,
    /// Sampled pages not resident.
    pub absent_pages: u32,
    /// The node holding most of the resident sampled pages (the lowest on a tie); null when none was
    /// resident.
    pub node: Option<u32>,
    /// The CPU and node the allocating thread ran on; null when unknown.
    pub alloc_cpu: Option<u32>,
    pub alloc_node: Option<u32>,
    /// True when most resident pages are on a node other than the allocating CPU's.
    pub remote: bool,
    /// Why a remote block is there: "placement_call" (an mbind over it, a page move, or a binding
    /// set_mempolicy in force when it was allocated) or "first_touch" (no such call: another node's
    /// thread wrote it first); null when not remote.
    pub cause: Option<&'static str>,
    /// With "placement_call": the index in `calls` of the call that placed it.
    pub placed_by_call: Option<usize>,
    pub frames: Vec<FrameOut>,
}

/// One NUMA node.
#[derive(Serialize, Debug)]
pub struct NumaNodeOut {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub distances: Vec<u32>,
}

/// Performance counters of the process.
#[derive(Serialize, Debug, Default)]
pub struct CountersSection {
    /// Each counter's total, or why it could not be read.
    pub values: Vec<CounterOut>,
    /// The totals over time, read about once a second while the process ran.
    pub series: Vec<CounterSeriesOut>,
    pub findings: Vec<Finding>,
}

/// One counter's running total over time.
#[derive(Serialize, Debug)]
pub struct CounterSeriesOut {
    pub name: String,
    /// [seconds since start, total so far].
    pub points: Vec<(f64, u64)>,
}

/// One counter.
#[derive(Serialize, Debug)]
pub struct CounterOut {
    pub name: String,
    pub value: Option<u64>,
    pub error: Option<String>,
}

/// Host heap fragmentation, from the C library's statistics sampled every 100 ms.
#[derive(Serialize, Debug, Default)]
pub struct FragmentationSection {
    pub samples: u64,
    /// The most free bytes the allocator held and could not return, and when.
    pub peak_free_held_bytes: u64,
    pub peak_free_held_time_s: f64,
    /// Those bytes' share of the arena at that moment.
    pub peak_free_held_ratio: f64,
    /// The largest arena, and the largest resident set.
    pub peak_arena_bytes: u64,
    pub peak_rss_bytes: u64,
    /// The size classes whose freed blocks were holes among live blocks near the peak, most hole
    /// bytes first (at most 10).
    pub size_classes: Vec<SizeClassOut>,
    pub findings: Vec<Finding>,
}

/// Holes left by the frees of one size class.
#[derive(Serialize, Debug)]
pub struct SizeClassOut {
    /// The class: sizes from `min_bytes` to `max_bytes` (a power of two).
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// Bytes of the freed blocks that were holes, and how many.
    pub hole_bytes: u64,
    pub holes: u64,
    /// The most frequent size among them.
    pub common_size: u64,
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

/// Bandwidth of one kind of copy over time.
#[derive(Serialize, Debug)]
pub struct BandwidthSeries {
    /// "HtoD pageable", "DtoH pinned", ...
    pub kind: String,
    /// [interval start in seconds since start, bytes per second].
    pub points: Vec<(f64, f64)>,
}

/// Copies between host and device.
#[derive(Serialize, Debug, Default)]
pub struct TransfersSection {
    /// One row per (direction, host memory).
    pub summary: Vec<TransferRow>,
    /// Call sites, largest by bytes first.
    pub sites: Vec<TransferSite>,
    /// Copies by size: `{le_bytes, count}`; the last bucket has `le_bytes` null.
    pub histogram: Vec<SizeBucket>,
    /// Copies that failed.
    pub failed: u64,
    /// True when this machine's transfer ceilings were measured (`memshim bench`).
    pub ceilings_measured: bool,
    pub findings: Vec<Finding>,
}

/// A group of copies.
#[derive(Serialize, Debug)]
pub struct TransferRow {
    /// HtoD, DtoH, DtoD or HtoH.
    pub direction: &'static str,
    /// pageable, pinned, registered, managed or device.
    pub host_memory: &'static str,
    pub count: u64,
    pub bytes: u64,
    /// Time of the synchronous copies (their transfer time); null when there were none.
    pub seconds: Option<f64>,
    /// Bandwidth of the synchronous copies, in GB/s (1e9 bytes per second).
    pub gbps: Option<f64>,
    /// What `memshim bench` measured on this host for this kind of copy; null when not measured.
    pub ceiling_gbps: Option<f64>,
    /// Asynchronous copies, and how long their calls blocked the caller.
    pub async_count: u64,
    pub async_blocked_seconds: f64,
    /// Asynchronous copies timed on the GPU with events (those of `MEMSHIM_COPY_EVENT_BYTES`, 64 KiB
    /// by default, or more), their GPU time, and their bandwidth in GB/s; null when none was timed.
    pub gpu_timed_count: u64,
    pub gpu_seconds: Option<f64>,
    pub gpu_gbps: Option<f64>,
}

/// A call site of copies.
#[derive(Serialize, Debug)]
pub struct TransferSite {
    pub direction: &'static str,
    pub host_memory: &'static str,
    pub count: u64,
    pub bytes: u64,
    pub seconds: Option<f64>,
    pub async_count: u64,
    pub async_blocked_seconds: f64,
    /// As in the summary rows.
    pub gpu_timed_count: u64,
    pub gpu_gbps: Option<f64>,
    pub frames: Vec<FrameOut>,
}

/// One bucket of the copy-size histogram.
#[derive(Serialize, Debug)]
pub struct SizeBucket {
    pub le_bytes: Option<u64>,
    pub count: u64,
}

/// Call sites whose live memory kept climbing over the run.
#[derive(Serialize, Debug, Default)]
pub struct GrowthSection {
    /// Host heap sites, fastest first.
    pub host: Vec<GrowthSite>,
    /// Device memory sites, fastest first.
    pub device: Vec<GrowthSite>,
    pub findings: Vec<Finding>,
}

/// A growing site.
#[derive(Serialize, Debug)]
pub struct GrowthSite {
    /// Live bytes at the first high-water point, and when (seconds since start).
    pub from_bytes: u64,
    pub from_time_s: f64,
    /// Live bytes at the last high-water point, and when.
    pub to_bytes: u64,
    pub to_time_s: f64,
    /// Growth rate between them.
    pub rate_bytes_per_s: f64,
    /// Live bytes at the end.
    pub live_bytes: u64,
    pub frames: Vec<FrameOut>,
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
    /// The sites that held the most when the peak was reached (`bytes`/`count`: what they held
    /// then), at most [`PEAK_SITES`], largest first: the flame graph at the peak.
    pub peak_sites: Vec<Site>,
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

/// CUDA memory over the run.
#[derive(Serialize, Debug, Default)]
pub struct DeviceSection {
    /// True when the process made any CUDA memory call the shim saw.
    pub seen: bool,
    /// Device allocations (device memory and physical memory).
    pub allocations: u64,
    pub frees: u64,
    pub allocated_bytes: u64,
    pub live_bytes: u64,
    pub peak_bytes: u64,
    pub peak_time_s: f64,
    /// One row per kind of CUDA memory.
    pub kinds: Vec<KindRow>,
    /// One row per GPU.
    pub devices: Vec<DeviceRow>,
    /// GPU memory (device and physical) by who allocated it: "program", "nccl" or "cuda_driver"
    /// (as `Site::owner`); owners that allocated nothing are left out.
    pub owners: Vec<OwnerRow>,
    /// Failed calls.
    pub failures: Vec<FailureOut>,
    /// `cuMemGetInfo` calls.
    pub mem_info_calls: u64,
    /// Device allocations by size: `{le_bytes, count}`; the last bucket has `le_bytes` null.
    pub size_histogram: Vec<SizeBucket>,
    /// How many different sizes were allocated.
    pub distinct_sizes: u64,
    pub managed_hints: ManagedHints,
    /// Unified-memory activity from CUPTI's counters (`MEMSHIM_CUPTI=1`).
    pub unified_memory: UnifiedMemoryOut,
    /// The machine's GPUs as NVML saw them while the process ran (empty without NVML).
    pub gpus: Vec<GpuOut>,
    /// Conclusions in plain words, each with its evidence.
    pub findings: Vec<Finding>,
}

/// What CUPTI counted of managed memory.
#[derive(Serialize, Debug)]
pub struct UnifiedMemoryOut {
    /// "off" (not asked for), "unavailable" (asked for, could not start: see `detail`) or "on".
    pub cupti: &'static str,
    /// The CUPTI library used, or why it could not be used; null when off.
    pub detail: Option<String>,
    /// When the counters started, in seconds from the trace's start (CUPTI is loaded once the
    /// program first uses CUDA: what migrated before is not counted); null unless on.
    pub since_s: Option<f64>,
    pub htod_bytes: u64,
    pub dtoh_bytes: u64,
    pub dtod_bytes: u64,
    pub cpu_page_faults: u64,
    /// GPU page faults, in the groups the GPU's fault buffer reports.
    pub gpu_page_faults: u64,
    pub thrashing: u64,
    pub throttling: u64,
    pub remote_maps: u64,
    /// Managed allocation sites by bytes migrated, largest first.
    pub sites: Vec<UnifiedSite>,
}

impl Default for UnifiedMemoryOut {
    fn default() -> Self {
        UnifiedMemoryOut {
            cupti: "off",
            detail: None,
            since_s: None,
            htod_bytes: 0,
            dtoh_bytes: 0,
            dtod_bytes: 0,
            cpu_page_faults: 0,
            gpu_page_faults: 0,
            thrashing: 0,
            throttling: 0,
            remote_maps: 0,
            sites: Vec::new(),
        }
    }
}

/// Unified-memory activity on the managed memory of one allocation site.
#[derive(Serialize, Debug)]
pub struct UnifiedSite {
    pub htod_bytes: u64,
    pub dtoh_bytes: u64,
    pub cpu_page_faults: u64,
    pub gpu_page_faults: u64,
    pub thrashing: u64,
    pub frames: Vec<FrameOut>,
}

/// GPU memory one owner allocated.
#[derive(Serialize, Debug, PartialEq)]
pub struct OwnerRow {
    pub owner: &'static str,
    pub allocations: u64,
    pub allocated_bytes: u64,
    /// Still live at the end.
    pub live_bytes: u64,
}

/// One GPU, by NVML's index (CUDA's ordinals follow `CUDA_VISIBLE_DEVICES`; match them by UUID).
#[derive(Serialize, Debug)]
pub struct GpuOut {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub pcie_generation: u32,
    pub pcie_width: u32,
    /// The NUMA node of its PCIe slot, -1 when unknown.
    pub numa_node: i32,
    /// NVML readings taken.
    pub samples: u64,
    pub total_bytes: u64,
    /// The most memory in use on the device, by every process.
    pub peak_used_bytes: u64,
    /// The most the driver counted for this process, and when; null when NVML does not say (in a
    /// container without the host's process ids, say).
    pub peak_process_bytes: Option<u64>,
    pub peak_process_time_s: Option<f64>,
    /// Mean GPU utilisation (percent of time a kernel ran) and mean memory utilisation (percent of
    /// time device memory was read or written) over the readings; null without them.
    pub mean_gpu_util: Option<f64>,
    pub mean_memory_util: Option<f64>,
    /// Mean memory utilisation over the readings in which a kernel ran.
    pub busy_memory_util: Option<f64>,
}

/// One kind of CUDA memory.
#[derive(Serialize, Debug)]
pub struct KindRow {
    /// device, managed, pinned, registered, reserved, physical or mapped.
    pub kind: &'static str,
    pub allocations: u64,
    pub allocated_bytes: u64,
    pub live_bytes: u64,
    pub live_count: u64,
    pub peak_bytes: u64,
}

/// One GPU.
#[derive(Serialize, Debug)]
pub struct DeviceRow {
    /// The device ordinal, -1 when the context was unknown.
    pub device: i32,
    pub live_bytes: u64,
    pub peak_bytes: u64,
    pub peak_time_s: f64,
    /// Total memory as the driver reported it; null when the program never asked.
    pub total_bytes: Option<u64>,
    /// The least free memory the driver reported; null when never asked.
    pub min_free_bytes: Option<u64>,
    /// The most the driver reported in use beyond what the program held on this GPU (the CUDA
    /// context, other processes, memory allocated where memshim could not see); null when never asked.
    pub unaccounted_bytes: Option<u64>,
}

/// A failed CUDA call.
#[derive(Serialize, Debug)]
pub struct FailureOut {
    pub api: String,
    pub size: u64,
    pub result: i32,
    pub error: String,
    pub device: i32,
    pub time_s: f64,
    /// Device bytes the program held when it failed.
    pub live_device_bytes: u64,
    /// True when the same size was allocated again on the same thread after frees.
    pub retried_after_freeing: bool,
    /// The bytes freed before that retry.
    pub freed_before_retry: u64,
    pub frames: Vec<FrameOut>,
}

/// Unified-memory hints.
#[derive(Serialize, Debug, Default)]
pub struct ManagedHints {
    pub prefetch_calls: u64,
    pub prefetch_bytes: u64,
    pub advise_calls: u64,
}

/// A conclusion.
#[derive(Serialize, Debug)]
pub struct Finding {
    /// A short, stable identifier.
    pub kind: &'static str,
    /// The conclusion and its evidence, in plain words.
    pub text: String,
}

/// Leaks of one kind.
#[derive(Serialize, Debug, Default)]
pub struct LeakClass {
    pub bytes: u64,
    pub count: u64,
    /// Of `bytes` and `count`, what the CUDA driver allocated for itself (see `Site::owner`).
    pub driver_bytes: u64,
    pub driver_count: u64,
    /// Of `bytes` and `count`, what was allocated without a sampled stack (not in `sites`).
    pub unsampled_bytes: u64,
    pub unsampled_count: u64,
    pub sites: Vec<Site>,
}

/// One call site: a distinct stack.
#[derive(Serialize, Debug)]
pub struct Site {
    /// "program"; "cuda_driver" when a frame is in the driver's own libraries; "nccl" when a frame is
    /// NCCL's.
    pub owner: &'static str,
    /// Bytes still live from here.
    pub bytes: u64,
    /// Blocks still live from here.
    pub count: u64,
    /// Blocks allocated here over the run.
    pub allocations: u64,
    /// Bytes allocated here over the run.
    pub allocated_bytes: u64,
    /// With sampling: what this site's sampled blocks stand for (an estimate); null otherwise.
    pub estimated: Option<Estimate>,
    /// The stack, innermost first.
    pub frames: Vec<FrameOut>,
}

/// A scaled estimate from sampled stacks.
#[derive(Serialize, Debug)]
pub struct Estimate {
    pub bytes: u64,
    pub count: u64,
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
    /// Present (true) on a Python frame of the main thread, lent to a native thread that ran no
    /// Python code (PyTorch's autograd engine during `backward()`, say).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub main_thread: bool,
}
