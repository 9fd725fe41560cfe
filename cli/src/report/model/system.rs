//! The model of the CPU memory-system sections: NUMA placement, performance counters and heap
//! fragmentation.
use serde::Serialize;

use super::frame::FrameOut;
use super::site::*;

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
    /// Of `placements`, the remote ones; of `threads`, those that migrated.
    pub remote_blocks: u64,
    pub migrated_threads: u64,
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
    /// The program's function that made the call (as `FailureOut::site`).
    pub site: Option<String>,
    #[serde(serialize_with = "super::frame_table::indexes")]
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
    /// The pages sampled: resident (`pages_by_node`) and not (`absent_pages`).
    pub sampled_pages: u32,
    /// The program's function that allocated it (as `FailureOut::site`).
    pub site: Option<String>,
    #[serde(serialize_with = "super::frame_table::indexes")]
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
    /// The most readings of any one counter in `series`; null without a series.
    pub samples: Option<u64>,
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
