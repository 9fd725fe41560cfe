//! The machine and the memory system: NUMA topology and calls, heap statistics, counters,
//! placement of large blocks.
use serde::{Deserialize, Serialize};

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    /// The node's number.
    pub id: u32,
    /// Its CPUs.
    pub cpus: Vec<u32>,
    /// Distances to every node, by node number (10 is local).
    pub distances: Vec<u32>,
}

/// A sample of glibc's heap statistics (`mallinfo2`) and of the resident set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapStats {
    /// Bytes the allocator got from the system with brk/sbrk (main arena and others).
    pub arena: u64,
    /// Bytes in blocks handed out.
    pub in_use: u64,
    /// Bytes free inside the allocator's arenas: held, not returned to the system.
    pub free: u64,
    /// Bytes in blocks the allocator mapped with mmap.
    pub mmapped: u64,
    /// Free bytes at the top of the main arena, which could be returned.
    pub releasable: u64,
    /// Resident set size of the process, bytes.
    pub rss: u64,
}

/// A performance counter's total, or why it could not be opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counter {
    /// Its name (`page_faults_minor`, `cache_misses`, ...).
    pub name: String,
    /// The count, when it could be read.
    pub value: Option<u64>,
    /// Why not, otherwise.
    pub error: Option<String>,
}

/// Which placement or affinity call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NumaFn {
    /// `mbind`.
    Mbind,
    /// `set_mempolicy`.
    SetMempolicy,
    /// `migrate_pages`.
    MigratePages,
    /// `move_pages` with target nodes (a move, not a query).
    MovePages,
    /// `sched_setaffinity`.
    SchedSetaffinity,
    /// `pthread_setaffinity_np`.
    PthreadSetaffinity,
}

/// A placement or affinity call, its arguments decoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaCall {
    /// The call.
    pub func: NumaFn,
    /// The memory policy mode (`MPOL_*`), -1 when the call has none.
    pub mode: i32,
    /// The nodes of its node mask (for migrate_pages, the target nodes; for move_pages, the distinct
    /// target nodes).
    pub nodes: Vec<u32>,
    /// The nodes it moves away from (migrate_pages).
    pub from_nodes: Vec<u32>,
    /// The CPUs of its CPU mask (affinity calls).
    pub cpus: Vec<u32>,
    /// Start of the range (mbind), 0 otherwise.
    pub addr: u64,
    /// Bytes of the range (mbind), or pages (move_pages).
    pub len: u64,
    /// The process or thread it applies to (0: the caller).
    pub target: i64,
    /// Its flags.
    pub flags: u32,
    /// What it returned.
    pub result: i64,
    /// The stack id of the call.
    pub stack: u32,
}

/// The CPU of a large allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocCpu {
    /// The block.
    pub addr: u64,
    /// The CPU the allocating thread ran on.
    pub cpu: u32,
}

/// Which NUMA nodes the sampled pages of a block are on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The block.
    pub addr: u64,
    /// Its size.
    pub len: u64,
    /// Pages sampled (spread evenly over the block).
    pub pages: u32,
    /// (node, pages) for the sampled pages that are resident.
    pub nodes: Vec<(u32, u32)>,
    /// Sampled pages not resident yet (never touched, or swapped out).
    pub absent: u32,
}

/// Where one thread was running when the sampler looked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// Its kernel thread id.
    pub tid: u32,
    /// The CPU it last ran on (`/proc/self/task/<tid>/stat`, field 39).
    pub cpu: u32,
    /// Its name (`comm`), given when the thread is first seen and when it moved to another node;
    /// `None` otherwise (the last name given stands).
    pub name: Option<String>,
}
