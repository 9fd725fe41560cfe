//! The hot path: turns an intercepted call into a message. Called by the hooks after (allocations)
//! or before (frees) the real call.
//!
//! Each entry point enters the reentrancy guard (so anything it allocates passes straight through),
//! keeps the caller's `errno`, and catches any panic so that nothing ever unwinds into C. Never:
//! symbolize, take a lock a traced thread may hold, or allocate through the traced allocator.
use std::panic::{catch_unwind, AssertUnwindSafe};

use memshim_trace::{AllocFn, MapFn, Record};

use crate::record::msg::Msg;
use crate::{
    channel, record::guard, record::sampling, record::stacks, record::stacks::seen_table, sys,
    sys::clock, sys::real,
};

/// Runs `f` inside the guard with errno preserved and panics contained.
#[inline(always)]
fn record(active: fn() -> bool, f: impl FnOnce()) {
    let Some(_g) = guard::enter() else { return };
    record_guarded(active, f);
}

/// As [`record`], for a caller that already holds the guard.
#[inline(always)]
pub fn record_guarded(active: fn() -> bool, f: impl FnOnce()) {
    let saved = sys::errno();
    if active() && catch_unwind(AssertUnwindSafe(f)).is_err() {
        channel::fail("internal error in the recorder");
    }
    sys::set_errno(saved);
}

/// The stack hash of an allocation whose stack was not sampled (real hashes are never 0).
pub const UNSAMPLED_HASH: u64 = 0;

/// Captures the caller's stack and returns its hash, sending the frames if they are new.
#[inline(always)]
pub fn stack_hash() -> u64 {
    stack_hash_with(false)
}

/// As [`stack_hash`], for a rare call (CUDA, NUMA) that a thread without Python frames makes on
/// behalf of Python code: such a thread gets the main thread's Python frames, marked as lent.
#[inline(always)]
pub fn call_stack_hash() -> u64 {
    stack_hash_with(true)
}

#[inline(always)]
fn stack_hash_with(lend_python: bool) -> u64 {
    // A thread close to the end of a small stack gets an empty stack rather than an overflow: the
    // capture below reserves several KiB of its own before any unwinder runs.
    let room = crate::record::guard::stack_room();
    if room.is_some_and(|r| r < stacks::MIN_ROOM_ANY) {
        let hash = stacks::hash(&[]);
        if seen_table::first_sighting(hash) {
            channel::send(Msg::Stack {
                hash,
                frames: Box::new([]),
            });
        }
        return hash;
    }
    captured_hash(lend_python, room)
}

/// Captures and hashes the stack, out of line so that its buffers take stack only when used: the
/// small one unless the depth asked for or Python frames need the large one.
#[inline(never)]
fn captured_hash(lend_python: bool, room: Option<usize>) -> u64 {
    let depth = channel::config().map_or(64, |c| c.stack_depth);
    if depth <= stacks::SMALL_DEPTH && !crate::python::may_merge() {
        captured_in::<{ stacks::SMALL_CAPTURE_LEN }>(depth, lend_python, room)
    } else {
        captured_in::<{ stacks::CAPTURE_LEN }>(depth, lend_python, room)
    }
}

#[inline(always)]
fn captured_in<const N: usize>(depth: usize, lend_python: bool, room: Option<usize>) -> u64 {
    let mut buf = [0u64; N];
    let len = stacks::capture(&mut buf, depth, lend_python, room);
    let frames = &buf[..len];
    let hash = stacks::hash(frames);
    if seen_table::first_sighting(hash) {
        channel::send(Msg::Stack {
            hash,
            frames: frames.into(),
        });
    }
    hash
}

/// Who a heap call is for.
pub enum HeapCall {
    /// A program's call, to be recorded; the guard is held across the real call.
    Traced(guard::Guard),
    /// A call made on one of the shim's own threads: served by the shim's own heap, never
    /// recorded, so the program's allocator never makes an arena (64 MiB of address space) for it.
    /// Also a program thread's call inside `guard::with_own_heap` (a block the C library frees by
    /// itself later, outside the shim).
    Shim,
    /// Not recorded and straight to the allocator: heap calls are not recorded (`MEMSHIM_HEAP=0`),
    /// or a program thread is inside a hook (the unwinder's own allocations). A program thread
    /// already has its arena and per-thread cache; sending those calls to the shim's heap, one lock
    /// for every thread, made 300 Python threads queue on it.
    Untraced,
}

/// Enters the guard for a heap hook, before the real call. Held across the real call, the guard
/// makes whatever the allocator itself does pass straight through: jemalloc's and tcmalloc's own
/// `mmap`s (part of the heap already, not the program's mappings) are not recorded, and no stack is
/// captured while the allocator holds its locks (the capture's first touch of libunwind's
/// thread-locals allocates, which would wait on them).
#[inline(always)]
pub fn enter_heap() -> HeapCall {
    if !channel::heap_enabled() {
        return if shim_heap_thread() {
            HeapCall::Shim
        } else {
            HeapCall::Untraced
        };
    }
    match guard::enter() {
        Some(g) => HeapCall::Traced(g),
        None if shim_heap_thread() => HeapCall::Shim,
        None if guard::own_heap_routed()
            && !channel::LATE.load(std::sync::atomic::Ordering::Relaxed) =>
        {
            HeapCall::Shim
        }
        None => HeapCall::Untraced,
    }
}

/// A shim thread whose C-level heap calls the shim's own heap serves. Not in a shim that was
/// attached (`channel::LATE`): the hooks there are import-table slots, the C library's own
/// included, and are put back at detach, so a block the C library allocated for a shim thread (the
/// message of a failed `dlopen`, kept until the thread ends; what NVML or CUPTI keep) would be
/// freed into the C library after detach.
#[inline]
fn shim_heap_thread() -> bool {
    guard::helper_thread() && !channel::LATE.load(std::sync::atomic::Ordering::Relaxed)
}

/// A heap block was allocated (the hook holds the guard, see [`enter_heap`]).
#[inline]
pub fn on_alloc(_inside: &guard::Guard, func: AllocFn, addr: *mut libc::c_void, size: usize) {
    if addr.is_null() {
        return;
    }
    if sampling::thin() {
        return thin_alloc(func, addr, size);
    }
    // An allocation made before the shim's constructor ran (another library's, run first) starts
    // the trace here, and only then is the configuration read: in the thin mode it is counted, not
    // sent as an event of the full mode that the totals would leave out.
    let mut thin_now = false;
    record_guarded(channel::heap_active, || {
        if sampling::thin() {
            thin_now = true;
            return;
        }
        let stack = sampling::take(size as u64).then(stack_hash);
        send_alloc(func, addr, size, stack.unwrap_or(UNSAMPLED_HASH));
    });
    if thin_now {
        thin_alloc(func, addr, size);
    }
}

/// The thin sampling mode's allocation: counted; recorded only when sampled.
#[inline(always)]
fn thin_alloc(func: AllocFn, addr: *mut libc::c_void, size: usize) {
    let Some(usable) = thin_usable(addr) else {
        return;
    };
    if sampling::thin_alloc(addr as u64, size as u64, usable) {
        record_guarded(channel::heap_active, || {
            send_alloc(func, addr, size, stack_hash());
            channel::send(Msg::Record(Record::Usable(memshim_trace::Usable {
                addr: addr as u64,
                usable,
            })));
        });
    }
}

/// The usable size of the block at `addr` when the thin sampling mode counts now (an allocation, a
/// free, or the undoing of one) and the block is the allocator's.
#[inline(always)]
fn thin_usable(addr: *mut libc::c_void) -> Option<u64> {
    if !channel::heap_counting_guarded() {
        return None;
    }
    let usable = real::live_usable_size(addr) as u64;
    (usable != 0).then_some(usable)
}

/// Sends an allocation's event, and with it the CPU it ran on when the block is large.
fn send_alloc(func: AllocFn, addr: *mut libc::c_void, size: usize, stack: u64) {
    channel::send(Msg::Alloc {
        t: clock::monotonic_ns(),
        tid: guard::tid(),
        func,
        addr: addr as u64,
        size: size as u64,
        stack,
    });
    if channel::config().is_some_and(|c| c.placement_bytes > 0 && size as u64 >= c.placement_bytes)
    {
        let cpu = sys::current_cpu();
        if cpu >= 0 {
            channel::send(Msg::Record(Record::AllocCpu(memshim_trace::AllocCpu {
                addr: addr as u64,
                cpu: cpu as u32,
            })));
        }
    }
}

/// A heap block is about to be freed (the hook holds the guard, see [`enter_heap`]).
#[inline]
pub fn on_free(_inside: &guard::Guard, addr: *mut libc::c_void, realloc: bool) {
    if addr.is_null() {
        return;
    }
    if sampling::thin()
        && !thin_usable(addr).is_some_and(|u| sampling::thin_free(addr as u64, u, realloc))
    {
        return;
    }
    record_guarded(channel::heap_active, || {
        channel::send(Msg::Free {
            t: clock::monotonic_ns(),
            tid: guard::tid(),
            addr: addr as u64,
            realloc,
        })
    });
}

/// A realloc ended with its old block at `addr` gone (moved, or freed by a size of 0).
pub fn on_realloc_done(_inside: &guard::Guard, addr: *mut libc::c_void) {
    if sampling::thin() {
        sampling::thin_realloc_done(addr as u64);
    }
}

/// A realloc failed: the block whose free was already sent is still live.
pub fn on_realloc_failed(_inside: &guard::Guard, addr: *mut libc::c_void) {
    if sampling::thin() && !thin_usable(addr).is_some_and(|u| sampling::thin_unfree(addr as u64, u))
    {
        return;
    }
    record_guarded(channel::heap_active, || {
        channel::send(Msg::ReallocFailed {
            t: clock::monotonic_ns(),
            tid: guard::tid(),
            addr: addr as u64,
        })
    });
}

/// An anonymous mapping was created or moved.
pub fn on_map(func: MapFn, addr: *mut libc::c_void, len: usize, prot: i32, flags: i32) {
    record(channel::mmap_active, || {
        let t = clock::monotonic_ns();
        let stack = stack_hash();
        channel::send(Msg::Map {
            t,
            tid: guard::tid(),
            func,
            addr: addr as u64,
            len: len as u64,
            prot: prot as u32,
            flags: flags as u32,
            stack,
        });
    });
}

/// A range is about to be unmapped.
pub fn on_unmap(addr: *mut libc::c_void, len: usize) {
    record(channel::mmap_active, || {
        channel::send(Msg::Unmap {
            t: clock::monotonic_ns(),
            tid: guard::tid(),
            addr: addr as u64,
            len: len as u64,
        });
    });
}

/// A NUMA placement or affinity call. The masks are decoded only when recording.
#[allow(clippy::too_many_arguments)]
pub fn on_numa(
    func: memshim_trace::NumaFn,
    mode: i32,
    nodes: impl FnOnce() -> Vec<u32>,
    from_nodes: impl FnOnce() -> Vec<u32>,
    cpus: impl FnOnce() -> Vec<u32>,
    addr: u64,
    len: u64,
    target: i64,
    flags: u32,
    result: i64,
) {
    record(channel::numa_active, || {
        let t = clock::monotonic_ns();
        let record = memshim_trace::Record::NumaCall(Box::new(memshim_trace::NumaCall {
            func,
            mode,
            nodes: nodes(),
            from_nodes: from_nodes(),
            cpus: cpus(),
            addr,
            len,
            target,
            flags,
            result,
            stack: 0,
        }));
        send_stacked(t, record, true);
    });
}

/// Sends a record made by the calling thread at `t` (a CUDA or NUMA call), with its stack when
/// `with_stack` (the writer puts the stack's id into the record). Call it while recording.
pub fn send_stacked(t: u64, record: memshim_trace::Record, with_stack: bool) {
    let stack = with_stack.then(call_stack_hash);
    channel::send(Msg::Stacked(Box::new(crate::record::msg::StackedMsg {
        t,
        tid: guard::tid(),
        stack,
        record,
    })));
}

/// Runs a lifecycle step (exit, exec) with the guard held and panics contained.
pub fn lifecycle<T: Default>(f: impl FnOnce() -> T) -> T {
    let _g = guard::enter();
    let saved = sys::errno();
    let out = catch_unwind(AssertUnwindSafe(f)).unwrap_or_default();
    sys::set_errno(saved);
    out
}
