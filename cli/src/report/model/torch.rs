//! The model of the PyTorch section: the caching allocator seen from the inside.
use serde::Serialize;

use super::frame::FrameOut;
use super::growth::GrowthSite;
use super::site::*;
use super::torch_steps::{RolesOut, TorchStepsOut};

/// PyTorch's CUDA caching allocator: tensors by the line that holds them, reserved against
/// allocated per GPU, the peak, and every out-of-memory error with its verdict.
#[derive(Serialize, Debug)]
pub struct TorchSection {
    /// "on" (the allocator's own events are recorded), "off" (driver level only: `detail` says
    /// why) or "absent" (the process never used PyTorch's CUDA allocator).
    pub state: &'static str,
    /// The PyTorch version found; null when absent or unreadable.
    pub version: Option<String>,
    /// The allocator backend (`native`, `cudaMallocAsync`); null when unknown.
    pub backend: Option<String>,
    /// What the shim did, or why the allocator is seen at the driver level only.
    pub detail: Option<String>,
    /// One row per GPU.
    pub devices: Vec<TorchDeviceOut>,
    /// Tensor memory (live blocks) still held at the end, by the site that allocated it; sizes are
    /// the bytes each tensor asked for. For a Python program the end is when the interpreter began
    /// to shut down (before clearing its globals freed what they held): see `held_when`.
    pub held_at_end: LeakClass,
    /// "python_exit" (the interpreter began to shut down) or "trace_end" (the last event).
    pub held_when: &'static str,
    /// When, in seconds since start.
    pub held_time_s: f64,
    /// Sites whose live tensor memory climbed over most of their life and was then given back.
    pub released_growth: Vec<ReleasedGrowth>,
    /// Sites whose live tensor memory kept climbing until the end.
    pub growth: Vec<GrowthSite>,
    /// Out-of-memory errors, in order.
    pub ooms: Vec<TorchOomOut>,
    /// The training steps, found by themselves.
    pub steps: TorchStepsOut,
    pub findings: Vec<Finding>,
}

impl Default for TorchSection {
    fn default() -> Self {
        TorchSection {
            state: "absent",
            version: None,
            backend: None,
            detail: None,
            devices: Vec::new(),
            held_at_end: LeakClass::default(),
            held_when: "trace_end",
            held_time_s: 0.0,
            released_growth: Vec::new(),
            growth: Vec::new(),
            ooms: Vec::new(),
            steps: TorchStepsOut::default(),
            findings: Vec::new(),
        }
    }
}

/// One GPU, by CUDA ordinal.
#[derive(Serialize, Debug)]
pub struct TorchDeviceOut {
    pub device: i32,
    /// Live tensor bytes at the end (PyTorch's `memory_allocated`, as requested sizes).
    pub allocated_bytes: u64,
    /// Reserved bytes at the end: the allocator's segments (`memory_reserved`).
    pub reserved_bytes: u64,
    /// Allocated and reserved bytes when the Python interpreter began to shut down; null without
    /// Python (or when it never shut down).
    pub exit_allocated_bytes: Option<u64>,
    pub exit_reserved_bytes: Option<u64>,
    pub peak_allocated_bytes: u64,
    pub peak_allocated_time_s: f64,
    pub peak_reserved_bytes: u64,
    pub peak_reserved_time_s: f64,
    /// Device memory the driver handed out on this GPU at the end, as memshim counted it.
    pub driver_bytes: u64,
    /// Of that, what is outside the allocator's segments (NCCL, library workspaces, other native
    /// allocations): `driver_bytes - reserved_bytes`.
    pub outside_bytes: u64,
    /// The sites that held the most when allocated memory peaked, largest first.
    pub peak_sites: Vec<Site>,
    /// By role when allocated memory peaked; null when not known.
    pub peak_roles: Option<RolesOut>,
    /// [seconds since start, allocated bytes].
    pub allocated: Vec<(f64, u64)>,
    /// [seconds since start, reserved bytes].
    pub reserved: Vec<(f64, u64)>,
}

/// Growth that was given back before the end.
#[derive(Serialize, Debug)]
pub struct ReleasedGrowth {
    pub device: i32,
    /// Live bytes at the first high-water point, and when (seconds since start).
    pub from_bytes: u64,
    pub from_time_s: f64,
    /// The highest it reached, and when.
    pub peak_bytes: u64,
    pub peak_time_s: f64,
    /// When it fell below half of that peak.
    pub released_time_s: f64,
    /// Live bytes at the end.
    pub live_bytes: u64,
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}

/// An out-of-memory error of the allocator.
#[derive(Serialize, Debug)]
pub struct TorchOomOut {
    pub time_s: f64,
    pub device: i32,
    /// The bytes asked for (rounded as the allocator rounds).
    pub requested_bytes: u64,
    /// The GPU's memory (or the allowed share of it); 0 when the allocator did not say.
    pub device_total_bytes: u64,
    /// What the driver said was free.
    pub device_free_bytes: u64,
    /// Live tensor bytes and reserved bytes on that GPU then.
    pub allocated_bytes: u64,
    pub reserved_bytes: u64,
    /// Reserved but free: the cache's free space.
    pub cache_free_bytes: u64,
    /// The largest free block in the cache; null when it could not be asked.
    pub largest_free_bytes: Option<u64>,
    /// "fragmentation" or "capacity".
    pub verdict: &'static str,
    /// The allocator ran with expandable segments (seen from its events): the fix for
    /// fragmentation is then not to turn them on. Not in the JSON: `text` says it.
    #[serde(skip)]
    pub expandable: bool,
    /// The verdict and its fix, in plain words.
    pub text: String,
    /// What each site held then, largest first.
    pub holders: Vec<Site>,
    /// By role then; null when not known.
    pub roles: Option<RolesOut>,
    /// The stack of the failing request.
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}
