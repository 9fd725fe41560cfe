//! The model of the device section: CUDA memory by kind, GPU and owner, failures, NVML readings and
//! unified memory.
use serde::Serialize;

use super::frame::FrameOut;
use super::site::*;
use super::transfers::SizeBucket;

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
    /// Managed memory allocated before the counters started: when the first of it was (seconds
    /// from the trace's start) and how much; null when none was (CUPTI starts before the first
    /// managed allocation is returned to the program), and when the counters are not on.
    pub unwatched_from_s: Option<f64>,
    pub unwatched_bytes: u64,
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
            unwatched_from_s: None,
            unwatched_bytes: 0,
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
    #[serde(serialize_with = "super::frame_table::indexes")]
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
    /// The program's function that made the call (see `report::owner::first_program_function`):
    /// in a Python process its innermost Python function; null when no frame names one.
    pub site: Option<String>,
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}

/// Unified-memory hints.
#[derive(Serialize, Debug, Default)]
pub struct ManagedHints {
    pub prefetch_calls: u64,
    pub prefetch_bytes: u64,
    pub advise_calls: u64,
}
