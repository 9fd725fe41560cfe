//! The model of the training steps found in a PyTorch process, and of memory by role.
use serde::Serialize;

use super::frame::FrameOut;
use super::site::*;

/// Tensor memory by what it is for, inferred from the frames that allocated each block (see
/// `report::torch_roles`), with the cache's free space (reserved less allocated) beside it.
#[derive(Serialize, Debug, Default, Clone, PartialEq, Eq)]
pub struct RolesOut {
    /// Allocated under `Module.to`/`cuda`/`_apply`, `nn.Parameter` or a layer's constructor.
    pub parameters: u64,
    /// Allocated under autograd's backward (the gradients and the backward pass's temporaries).
    pub gradients: u64,
    /// Allocated under `Optimizer.step` (its state and temporaries).
    pub optimizer_state: u64,
    /// Allocated under the forward pass (`torch.nn` modules): activations and saved tensors.
    pub activations: u64,
    /// Allocated by the DataLoader or by copies the program's own lines made (`x.to("cuda")`).
    pub data: u64,
    /// Library workspaces allocated through the allocator (cuBLAS, cuDNN).
    pub workspaces: u64,
    /// Anything else (tensors the program's own lines made).
    pub other: u64,
    /// Reserved but not allocated: the cache's free space.
    pub cache_free: u64,
}

/// The training steps, found by themselves.
#[derive(Serialize, Debug, Default)]
pub struct TorchStepsOut {
    /// "loop" (the repeating outermost Python line of the loop's body), or null when no step was
    /// found (fewer than three repetitions).
    pub found_by: Option<&'static str>,
    /// The line that begins each step (its Python frames, outermost last).
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub marker: Vec<FrameOut>,
    /// That line, as the findings name a place: `function (file:line)`.
    pub marker_place: String,
    /// The steps, in order.
    pub steps: Vec<StepOut>,
    /// The `index` of the first step whose `peak_allocated_bytes` is the highest; null without
    /// steps.
    pub peak_step: Option<u32>,
    /// Sites whose memory grew by about the same amount each step, largest first.
    pub growth: Vec<StepGrowth>,
    /// Steps past the first million stretches of allocations are not cut.
    pub segments_left_out: u64,
    pub findings: Vec<Finding>,
}

/// One step.
#[derive(Serialize, Debug)]
pub struct StepOut {
    /// From 1.
    pub index: u32,
    pub start_time_s: f64,
    pub duration_s: f64,
    /// Tensor memory (all GPUs): the most allocated during the step, what was allocated when the
    /// next step began, and the most reserved.
    pub peak_allocated_bytes: u64,
    pub end_allocated_bytes: u64,
    pub peak_reserved_bytes: u64,
    /// The host heap's most live bytes during the step (as the host timeline holds it).
    pub peak_host_bytes: u64,
    /// Bytes copied host to device and device to host during the step.
    pub htod_bytes: u64,
    pub dtoh_bytes: u64,
    /// By role when allocated memory peaked in the step.
    pub roles_at_peak: RolesOut,
}

/// A site that grew every step.
#[derive(Serialize, Debug)]
pub struct StepGrowth {
    /// "device" (tensor memory) or "host" (the heap).
    pub memory: &'static str,
    /// Bytes a step, from `since_step` to `until_step`.
    pub bytes_per_step: u64,
    pub since_step: u32,
    pub until_step: u32,
    /// Live bytes at its last high.
    pub bytes: u64,
    /// Where, as the findings name a place: `function (file:line)`.
    pub place: String,
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}
