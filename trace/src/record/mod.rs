//! The records a trace holds. Every record travels inside an [`Event`] with its time and thread.
//!
//! Stacks are referred to by small ids; a [`StackDef`] gives an id its frames, or since version 12 a
//! [`StackBranch`] the frames it adds to the trace's stack tree (see [`crate::StackTree`]). A stack
//! may be defined after the first event that uses it (threads race to the writer), so readers
//! resolve ids at the end.
use serde::{Deserialize, Serialize};

mod cuda;
mod heap;
mod job;
mod names;
mod python;
mod system;
mod torch;

pub use cuda::*;
pub use heap::*;
pub use job::*;
pub use names::*;
pub use python::*;
pub use system::*;
pub use torch::*;

/// One timestamped record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it happened: nanoseconds on the header's clock (stored to the microsecond since format
    /// version 2).
    pub t: u64,
    /// The kernel thread id that made the call (0 for records that belong to no thread).
    pub tid: u32,
    /// What happened.
    pub record: Record,
}

/// Everything a trace can say. The larger, rarer records are boxed so that a heap event, the common
/// case, stays small to move (a boxed record is stored exactly as the record itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    /// A host heap allocation succeeded.
    Alloc(Alloc),
    /// A host heap block is about to be freed (recorded before the real free, so a reused address is
    /// never paired with the wrong block).
    Free(Free),
    /// A realloc whose free half was already recorded failed: the old block is still live.
    ReallocFailed(ReallocFailed),
    /// An anonymous memory mapping was created (mmap) or moved (mremap).
    Map(Map),
    /// A range was unmapped.
    Unmap(Unmap),
    /// The frames of a stack id.
    Stack(StackDef),
    /// A loaded object (executable or shared library) was found in the process.
    ModuleLoad(Box<Module>),
    /// A loaded object is gone.
    ModuleUnload(ModuleUnload),
    /// Symbols the shim resolved in-process for some return addresses.
    Symbols(Vec<Symbol>),
    /// Events the shim could not record so far (a running total).
    Dropped(u64),
    /// A message from the shim about itself (why tracing stopped, what it could not do).
    Note(Note),
    /// The shim closed the trace in an orderly way. A trace without it is truncated.
    End(End),
    /// A CUDA allocation succeeded (device, managed, pinned host, registered, reserved or physical).
    DeviceAlloc(DeviceAlloc),
    /// A CUDA allocation is about to be released (recorded before the real call).
    DeviceFree(DeviceFree),
    /// A CUDA memory call failed.
    CudaFailure(CudaFailure),
    /// What the driver said about free and total device memory (`cuMemGetInfo`).
    MemInfo(MemInfo),
    /// A unified-memory hint: prefetch or advise.
    ManagedHint(ManagedHint),
    /// A memory copy through the driver; the event time is when the call started.
    Copy(Box<Transfer>),
    /// The machine's NUMA nodes, written at the start of the trace.
    Topology(Vec<NumaNode>),
    /// The C library's heap statistics and the process's resident memory, sampled while it runs.
    HeapStats(Box<HeapStats>),
    /// The process's performance counters at the end, or why each could not be read.
    Counters(Vec<Counter>),
    /// A NUMA placement or CPU affinity call.
    NumaCall(Box<NumaCall>),
    /// The CPU the thread that made a large allocation was running on (sent right after its Alloc).
    AllocCpu(AllocCpu),
    /// Where the pages of a large block are: sampled after the block was first touched.
    Placement(Box<Placement>),
    /// Host allocations are sampled: on average one stack per this many bytes allocated. Unless the
    /// trace holds [`Record::HeapTotals`], every allocation and free is still recorded and unsampled
    /// ones carry the stack id [`UNSAMPLED`].
    Sampling(u64),
    /// An entry of the string table (Python function and file names), defined once. Since version 3.
    PyString(PyString),
    /// A Python code object (a function) whose frames stacks refer to. Since version 3.
    PyCode(PyCode),
    /// The CPython interpreter the process runs, and whether its frames are recorded. Since version 3.
    Python(PythonRuntime),
    /// The process is one rank of a distributed job (torchrun, Slurm, MPI). Since version 3.
    Rank(Box<RankInfo>),
    /// The machine's GPUs as NVML describes them, once the process used CUDA. Since version 3.
    Gpus(Vec<GpuInfo>),
    /// NVML's readings of every GPU at one moment. Since version 3.
    GpuSamples(Vec<GpuSample>),
    /// An asynchronous copy bracketed by two CUDA events on its stream, whose GPU time a later
    /// [`Record::CopyTime`] with the same timer gives. Since version 5.
    TimedCopy(Box<TimedCopy>),
    /// How long an event-timed copy ran on the GPU. Since version 5.
    CopyTime(CopyTime),
    /// Whether CUPTI's unified-memory counters are being collected, and why not. Since version 5.
    Cupti(CuptiState),
    /// Unified-memory activity CUPTI reported since the last such record. Since version 5.
    UnifiedMemory(Vec<UmCounter>),
    /// The performance counters' totals so far, read while the process runs (about once a second);
    /// only counters that could be read. Since version 5.
    CounterSample(Vec<Counter>),
    /// The CPU each thread of the process last ran on, at one moment: sampled only on a machine with
    /// more than one NUMA node, to find threads that move between nodes. Since version 5.
    ThreadCpus(Vec<ThreadCpu>),
    /// A free stored by its allocation's distance (see `serials`); readers hand out the `Free` it
    /// stands for, never this. Since version 5.
    FreeBack(FreeBack),
    /// The usable size of the sampled allocation just recorded at the same address. Since version 6.
    Usable(Usable),
    /// The process's running totals of host allocations and frees: present only when just the sampled
    /// allocations (and their frees) are recorded as events; the first one is the baseline at the
    /// start of the trace. Since version 6.
    HeapTotals(HeapTotals),
    /// An event of PyTorch's CUDA caching allocator. Since version 8.
    Torch(TorchEvent),
    /// PyTorch's caching allocator ran out of memory, with its figures. Since version 8.
    TorchOom(Box<TorchOom>),
    /// Whether PyTorch's caching allocator is seen from the inside, and why not. Since version 8.
    TorchState(Box<TorchState>),
    /// The shim was attached to a running process; the trace begins there. Since version 9.
    Attached(Box<Attached>),
    /// Attached with the CUDA driver loaded: whether its calls after attach are seen, and the device
    /// memory in use at attach. Since version 11.
    AttachedCuda(Box<AttachedCuda>),
    /// The frames of a stack id, as a branch of the stack tree. Since version 12.
    StackBranch(StackBranch),
}

impl Record {
    /// The first format version that has this record's kind.
    pub fn since_version(&self) -> u32 {
        match self {
            Record::Attached(_)
            | Record::End(End {
                reason: EndReason::Detached,
                ..
            }) => 9,
            Record::AttachedCuda(_) => 11,
            Record::StackBranch(_) => 12,
            _ => 1,
        }
    }

    /// True for the records that name what events refer to (stacks, modules, symbols, Python code
    /// objects) or that close the trace: since version 4 they travel in frames of their own, so a
    /// reader that only needs names can skip the event frames without decoding them.
    pub fn names_frames(&self) -> bool {
        matches!(
            self,
            Record::Stack(_)
                | Record::StackBranch(_)
                | Record::ModuleLoad(_)
                | Record::ModuleUnload(_)
                | Record::Symbols(_)
                | Record::End(_)
                | Record::Note(_)
                | Record::PyString(_)
                | Record::PyCode(_)
                | Record::Python(_)
        )
    }

    /// The name of the record's kind, as counts and reports spell it (`alloc`, `device_free`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Record::Alloc(_) => "alloc",
            Record::Free(_) => "free",
            Record::ReallocFailed(_) => "realloc_failed",
            Record::Map(_) => "map",
            Record::Unmap(_) => "unmap",
            Record::Stack(_) | Record::StackBranch(_) => "stack",
            Record::ModuleLoad(_) => "module_load",
            Record::ModuleUnload(_) => "module_unload",
            Record::Symbols(_) => "symbols",
            Record::Dropped(_) => "dropped",
            Record::Note(_) => "note",
            Record::End(_) => "end",
            Record::DeviceAlloc(_) => "device_alloc",
            Record::DeviceFree(_) => "device_free",
            Record::CudaFailure(_) => "cuda_failure",
            Record::MemInfo(_) => "mem_info",
            Record::ManagedHint(_) => "managed_hint",
            Record::Copy(_) => "copy",
            Record::TimedCopy(_) => "timed_copy",
            Record::CopyTime(_) => "copy_time",
            Record::Cupti(_) => "cupti",
            Record::UnifiedMemory(_) => "unified_memory",
            Record::Sampling(_) => "sampling",
            Record::Topology(_) => "topology",
            Record::HeapStats(_) => "heap_stats",
            Record::Counters(_) => "counters",
            Record::NumaCall(_) => "numa_call",
            Record::AllocCpu(_) => "alloc_cpu",
            Record::Placement(_) => "placement",
            Record::PyString(_) => "py_string",
            Record::PyCode(_) => "py_code",
            Record::Python(_) => "python",
            Record::Rank(_) => "rank",
            Record::Gpus(_) => "gpus",
            Record::GpuSamples(_) => "gpu_samples",
            Record::CounterSample(_) => "counter_sample",
            Record::ThreadCpus(_) => "thread_cpus",
            Record::FreeBack(_) => "free_back",
            Record::Usable(_) => "usable",
            Record::HeapTotals(_) => "heap_totals",
            Record::Torch(_) => "torch",
            Record::TorchOom(_) => "torch_oom",
            Record::TorchState(_) => "torch_state",
            Record::Attached(_) => "attached",
            Record::AttachedCuda(_) => "attached_cuda",
        }
    }

    /// Puts a stack id into the record, when its kind carries one (the CUDA, NUMA and PyTorch
    /// records, whose stack the writer learns after the event was made); other kinds are left as
    /// they are.
    pub fn set_stack(&mut self, id: u32) {
        match self {
            Record::DeviceAlloc(r) => r.stack = id,
            Record::CudaFailure(r) => r.stack = id,
            Record::ManagedHint(r) => r.stack = id,
            Record::Copy(r) => r.stack = id,
            Record::TimedCopy(r) => r.copy.stack = id,
            Record::NumaCall(r) => r.stack = id,
            Record::Torch(r) => r.stack = id,
            Record::TorchOom(r) => r.stack = id,
            _ => {}
        }
    }
}
