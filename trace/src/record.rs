//! The records a trace holds. Every record travels inside an [`Event`] with its time and thread.
//!
//! Stacks are referred to by small ids; a [`StackDef`] gives an id its frames. A stack may be defined
//! after the first event that uses it (threads race to the writer), so readers resolve ids at the end.
use serde::{Deserialize, Serialize};

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

/// Everything a trace can say.
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
    ModuleLoad(Module),
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
    Copy(Transfer),
    /// The machine's NUMA nodes, written at the start of the trace.
    Topology(Vec<NumaNode>),
    /// The C library's heap statistics and the process's resident memory, sampled while it runs.
    HeapStats(HeapStats),
    /// The process's performance counters at the end, or why each could not be read.
    Counters(Vec<Counter>),
    /// A NUMA placement or CPU affinity call.
    NumaCall(NumaCall),
    /// The CPU the thread that made a large allocation was running on (sent right after its Alloc).
    AllocCpu(AllocCpu),
    /// Where the pages of a large block are: sampled after the block was first touched.
    Placement(Placement),
    /// Host allocations are sampled: on average one stack per this many bytes allocated. Every
    /// allocation and free is still recorded; unsampled ones carry the stack id [`UNSAMPLED`].
    Sampling(u64),
    /// An entry of the string table (Python function and file names), defined once. Since version 3.
    PyString(PyString),
    /// A Python code object (a function) whose frames stacks refer to. Since version 3.
    PyCode(PyCode),
    /// The CPython interpreter the process runs, and whether its frames are recorded. Since version 3.
    Python(PythonRuntime),
    /// The process is one rank of a distributed job (torchrun, Slurm, MPI). Since version 3.
    Rank(RankInfo),
    /// The machine's GPUs as NVML describes them, once the process used CUDA. Since version 3.
    Gpus(Vec<GpuInfo>),
    /// NVML's readings of every GPU at one moment. Since version 3.
    GpuSamples(Vec<GpuSample>),
}

/// One GPU, by NVML's index (not CUDA's ordinal, which `CUDA_VISIBLE_DEVICES` renumbers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML's index.
    pub index: u32,
    /// Its name (`NVIDIA H200`).
    pub name: String,
    /// Its UUID (`GPU-...`).
    pub uuid: String,
    /// The current PCIe link generation (0 when unknown).
    pub pcie_generation: u32,
    /// The current PCIe link width, lanes (0 when unknown).
    pub pcie_width: u32,
    /// The NUMA node of its PCIe slot, -1 when unknown.
    pub numa_node: i32,
}

/// NVML's reading of one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSample {
    /// NVML's index.
    pub index: u32,
    /// Memory in use on the whole device, by every process.
    pub used_bytes: u64,
    /// The device's memory.
    pub total_bytes: u64,
    /// Memory the driver counts for this process, when it tells.
    pub process_bytes: Option<u64>,
    /// PCIe throughput out of the GPU over NVML's last sampling window, bytes per second.
    pub pcie_tx_bytes_per_s: Option<u64>,
    /// PCIe throughput into the GPU, bytes per second.
    pub pcie_rx_bytes_per_s: Option<u64>,
    /// Percent of the last sample period in which a kernel ran (NVML's GPU utilisation).
    pub gpu_util: Option<u32>,
    /// Percent of the last sample period in which device memory was read or written.
    pub memory_util: Option<u32>,
}

/// Which rank of a distributed job a process is, as its launcher told it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    /// The global rank.
    pub rank: u32,
    /// The rank on its host, when the launcher says.
    pub local_rank: Option<u32>,
    /// How many ranks the job has, when the launcher says.
    pub world_size: Option<u32>,
    /// Where the numbers came from: `torchrun`, `env` (RANK set by hand or another launcher),
    /// `openmpi`, `pmi`, `slurm`.
    pub launcher: String,
}

impl Record {
    /// True for the records that name what events refer to (stacks, modules, symbols, Python code
    /// objects) or that close the trace: since version 4 they travel in frames of their own, so a
    /// reader that only needs names can skip the event frames without decoding them.
    pub fn names_frames(&self) -> bool {
        matches!(
            self,
            Record::Stack(_)
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
}

/// Bit 63 marks a stack frame as a Python frame rather than a return address: no user-space address
/// on a supported platform has it set.
pub const PYTHON_FRAME: u64 = 1 << 63;
/// Bit 62 of a Python frame: the frame is the main thread's, lent to a thread that ran no Python code.
const LENT: u64 = 1 << 62;

/// A stack frame: a native return address or a Python frame (code object and line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameRef {
    /// A return address.
    Native(u64),
    /// A Python frame: the [`PyCode`] id and the line being executed.
    Python {
        /// The code object's id.
        code: u32,
        /// The line number (0 when unknown).
        line: u32,
        /// True when the frame is the interpreter's main thread's, recorded for a native thread
        /// that ran no Python code of its own (PyTorch's autograd engine, say).
        lent: bool,
    },
}

impl FrameRef {
    /// The frame a stack entry stands for.
    pub fn decode(frame: u64) -> FrameRef {
        if frame & PYTHON_FRAME == 0 {
            FrameRef::Native(frame)
        } else {
            FrameRef::Python {
                code: ((frame >> 32) & 0x3FFF_FFFF) as u32,
                line: frame as u32,
                lent: frame & LENT != 0,
            }
        }
    }

    /// The stack entry for a Python frame of the thread itself (code ids above 2^30 - 1 wrap; the
    /// shim never issues them).
    pub fn python(code: u32, line: u32) -> u64 {
        PYTHON_FRAME | (u64::from(code & 0x3FFF_FFFF) << 32) | u64::from(line)
    }

    /// The stack entry for a frame lent by the main thread.
    pub fn python_lent(code: u32, line: u32) -> u64 {
        FrameRef::python(code, line) | LENT
    }
}

/// One string of the trace's string table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyString {
    /// The id [`PyCode`] records use.
    pub id: u32,
    /// The text.
    pub text: String,
}

/// A Python code object, by its names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyCode {
    /// The id Python frames carry.
    pub id: u32,
    /// The string id of its qualified name (`Class.method`; the plain name before Python 3.11).
    pub name: u32,
    /// The string id of its file name.
    pub file: u32,
    /// The line its definition starts on.
    pub first_line: u32,
}

/// The interpreter found in the process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonRuntime {
    /// Its version (`3.12.3`).
    pub version: String,
    /// True when stacks carry its frames.
    pub frames: bool,
    /// Why not, when they do not (an unsupported version, a layout that failed its check, turned off).
    pub reason: String,
}

/// The stack id of an allocation whose stack was not sampled.
pub const UNSAMPLED: u32 = u32::MAX;

/// Which allocation function was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AllocFn {
    /// `malloc`.
    Malloc,
    /// `calloc`.
    Calloc,
    /// `realloc` (the new block).
    Realloc,
    /// `reallocarray` (the new block).
    Reallocarray,
    /// `posix_memalign`.
    PosixMemalign,
    /// `aligned_alloc`.
    AlignedAlloc,
    /// `memalign`.
    Memalign,
    /// `valloc`.
    Valloc,
    /// `pvalloc`.
    Pvalloc,
}

/// A host heap allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alloc {
    /// The function called.
    pub func: AllocFn,
    /// The address returned.
    pub addr: u64,
    /// The size requested, in bytes.
    pub size: u64,
    /// The stack id of the call.
    pub stack: u32,
}

/// A host heap free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Free {
    /// The address freed.
    pub addr: u64,
    /// True when this is the free half of a realloc.
    pub realloc: bool,
}

/// A failed realloc: the block at `addr` stays live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReallocFailed {
    /// The old block's address.
    pub addr: u64,
}

/// Which mapping call created a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MapFn {
    /// `mmap` (or `mmap64`).
    Mmap,
    /// `mremap` (the new range).
    Mremap,
}

/// An anonymous mapping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Map {
    /// The function called.
    pub func: MapFn,
    /// Start of the range.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_*` bits.
    pub flags: u32,
    /// The stack id of the call.
    pub stack: u32,
}

/// An unmapped range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmap {
    /// Start of the range.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// The frames of one stack: return addresses, innermost first, the shim's own frames removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackDef {
    /// The id events use.
    pub id: u32,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
}

/// A loaded segment of a module, in the process's addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// First address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// True for executable segments.
    pub exec: bool,
}

/// A loaded object: enough to symbolize its addresses offline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// The path it was loaded from.
    pub path: String,
    /// The load bias: process address minus the address in the file.
    pub base: u64,
    /// The GNU build id, empty when the object has none.
    pub build_id: Vec<u8>,
    /// Its loaded segments.
    pub segments: Vec<Segment>,
}

/// A module that was unloaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleUnload {
    /// The path it was loaded from.
    pub path: String,
    /// Its load bias.
    pub base: u64,
}

/// One source-level frame of a symbolized address (inlined calls give several).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymFrame {
    /// Demangled function name.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line, 0 when unknown.
    pub line: u32,
}

/// What a return address resolved to, innermost inlined frame first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// The return address as it appears in stacks.
    pub addr: u64,
    /// Its frames, innermost first; empty when nothing was found.
    pub frames: Vec<SymFrame>,
}

/// A note from the shim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The note, a whole sentence.
    pub text: String,
}

/// How the trace ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndReason {
    /// The process exited normally (`exit` or return from `main`).
    Exit,
    /// The process called `_exit` or `_Exit`.
    QuickExit,
    /// The process replaced itself with `exec`.
    Exec,
    /// The shim stopped tracing because of an internal failure (see the notes).
    Failure,
}

/// The orderly end of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// Why the trace ended.
    pub reason: EndReason,
    /// Events the shim could not record.
    pub dropped_events: u64,
}

/// The CUDA driver call that was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CudaApi {
    /// `cuMemAlloc`.
    MemAlloc,
    /// `cuMemAllocPitch`.
    MemAllocPitch,
    /// `cuMemAllocManaged`.
    MemAllocManaged,
    /// `cuMemAllocAsync`.
    MemAllocAsync,
    /// `cuMemAllocFromPoolAsync`.
    MemAllocFromPoolAsync,
    /// `cuMemFree`.
    MemFree,
    /// `cuMemFreeAsync`.
    MemFreeAsync,
    /// `cuMemHostAlloc`.
    MemHostAlloc,
    /// `cuMemAllocHost`.
    MemAllocHost,
    /// `cuMemFreeHost`.
    MemFreeHost,
    /// `cuMemHostRegister`.
    MemHostRegister,
    /// `cuMemHostUnregister`.
    MemHostUnregister,
    /// `cuMemAddressReserve`.
    MemAddressReserve,
    /// `cuMemAddressFree`.
    MemAddressFree,
    /// `cuMemCreate`.
    MemCreate,
    /// `cuMemRelease`.
    MemRelease,
    /// `cuMemMap`.
    MemMap,
    /// `cuMemUnmap`.
    MemUnmap,
    /// `cuMemPrefetchAsync`.
    MemPrefetchAsync,
    /// `cuMemAdvise`.
    MemAdvise,
    /// `cuMemGetInfo`.
    MemGetInfo,
}

/// What kind of memory a CUDA allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DeviceMemory {
    /// Device memory (`cuMemAlloc*`, async and pool allocations).
    Device,
    /// Unified (managed) memory.
    Managed,
    /// Page-locked host memory allocated by CUDA.
    PinnedHost,
    /// Host memory the program allocated and pinned with `cuMemHostRegister`.
    Registered,
    /// Reserved virtual address space (`cuMemAddressReserve`): no memory behind it by itself.
    Reserved,
    /// Physical memory of the virtual-memory API (`cuMemCreate`); `addr` is its handle.
    Physical,
    /// A physical allocation mapped into reserved space (`cuMemMap`); `addr` is the mapped address.
    Mapped,
}

/// A successful CUDA allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceAlloc {
    /// The call.
    pub api: CudaApi,
    /// The kind of memory.
    pub kind: DeviceMemory,
    /// The address (or, for physical memory, the handle).
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// A CUDA release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFree {
    /// The call.
    pub api: CudaApi,
    /// The kind of memory released.
    pub kind: DeviceMemory,
    /// The address (or handle) released.
    pub addr: u64,
}

/// A failed CUDA memory call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaFailure {
    /// The call.
    pub api: CudaApi,
    /// The bytes it asked for (0 when it asked for none).
    pub size: u64,
    /// The `CUresult` it returned.
    pub result: i32,
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// A `cuMemGetInfo` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInfo {
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// Free bytes.
    pub free: u64,
    /// Total bytes.
    pub total: u64,
}

/// A unified-memory prefetch or advice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedHint {
    /// `MemPrefetchAsync` or `MemAdvise`.
    pub api: CudaApi,
    /// Start of the range.
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// The destination device (prefetch) or the advice value (advise).
    pub value: i32,
    /// The stack id of the call.
    pub stack: u32,
}

/// Which copy call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyApi {
    /// `cuMemcpy` (unified addressing: direction from the addresses).
    Memcpy,
    /// `cuMemcpyAsync` (unified addressing).
    MemcpyAsync,
    /// `cuMemcpyHtoD`.
    MemcpyHtoD,
    /// `cuMemcpyDtoH`.
    MemcpyDtoH,
    /// `cuMemcpyDtoD`.
    MemcpyDtoD,
    /// `cuMemcpyHtoDAsync`.
    MemcpyHtoDAsync,
    /// `cuMemcpyDtoHAsync`.
    MemcpyDtoHAsync,
    /// `cuMemcpyDtoDAsync`.
    MemcpyDtoDAsync,
    /// `cuMemcpyPeer`: device to device across contexts (GPUs). Since version 3.
    MemcpyPeer,
    /// `cuMemcpyPeerAsync`. Since version 3.
    MemcpyPeerAsync,
    /// `cuMemsetD8/D16/D32` (`src` is 0, `size` the bytes set). Since version 3.
    Memset,
    /// `cuMemsetD8/D16/D32Async`. Since version 3.
    MemsetAsync,
}

// 2D and 3D copies (`cuMemcpy2D*`, `cuMemcpy3D*`) are recorded as the 1D call of their direction
// (from their memory types: HtoD, DtoH, DtoD, or `Memcpy` when unified addressing decides), with the
// address of the first byte copied on each side (0 for a CUDA array) and `size` = width x height x
// depth.

impl CopyApi {
    /// True for the calls that return before the copy is done (when the host memory allows it).
    pub fn is_async(self) -> bool {
        matches!(
            self,
            CopyApi::MemcpyAsync
                | CopyApi::MemcpyHtoDAsync
                | CopyApi::MemcpyDtoHAsync
                | CopyApi::MemcpyDtoDAsync
                | CopyApi::MemcpyPeerAsync
                | CopyApi::MemsetAsync
        )
    }
}

/// A copy through the driver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// The call.
    pub api: CopyApi,
    /// Destination address.
    pub dst: u64,
    /// Source address.
    pub src: u64,
    /// Bytes.
    pub size: u64,
    /// The stream (0 for the default stream and for synchronous calls).
    pub stream: u64,
    /// How long the call took, in nanoseconds: the transfer for synchronous calls, the time the
    /// caller was blocked for asynchronous ones.
    pub duration_ns: u64,
    /// The `CUresult` it returned.
    pub result: i32,
    /// The device ordinal of the current context, -1 when unknown.
    pub device: i32,
    /// The stack id of the call.
    pub stack: u32,
}

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
