//! Flame graphs of the host heap: one tree of merged frames per weighting.
use serde::Serialize;

/// The host heap as three flame graphs: what was live at the heap's peak, what was still live at the
/// end, and what was allocated over the run. The CUDA driver's own allocations are left out, as the
/// leak tables leave them out.
#[derive(Serialize, Debug, Default)]
pub struct FlameSection {
    pub peak: FlameTree,
    pub leaked: FlameTree,
    pub allocated: FlameTree,
}

/// One flame graph: its root is the whole of `bytes`. The frames are a flat list, each naming its
/// parent, because a tree nested as deep as its stacks (hundreds of frames) would be deeper than
/// common JSON readers accept (serde_json stops at 128 levels).
#[derive(Serialize, Debug, Default, Clone, PartialEq)]
pub struct FlameTree {
    pub bytes: u64,
    pub blocks: u64,
    /// Frames weighing less than this were merged, with their siblings as light, into one node of
    /// kind "other" (0.1% of `bytes`, or more when that still left too many frames for a page).
    pub cut_below_bytes: u64,
    /// How many frames (counting each frame's own subtree) went into "other" nodes.
    pub merged_frames: u64,
    /// Depth first: every frame after its parent, a frame's children heaviest first.
    pub nodes: Vec<FlameNode>,
}

/// A frame with every stack that passes through it merged: native frames by function (or
/// `module+offset` when unnamed), Python frames by `function (file:line)`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FlameNode {
    pub name: String,
    /// "native", "python", or "other" for the frames merged because they weigh too little.
    pub kind: &'static str,
    pub bytes: u64,
    pub blocks: u64,
    /// The index in `nodes` of the frame that called this one; null for the outermost frames.
    pub parent: Option<u32>,
}
