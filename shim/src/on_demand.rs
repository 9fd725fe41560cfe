//! The shim's helper threads (writer and sampler) started when they are needed, not when the trace
//! starts. A second thread in the process is what makes glibc's allocator take an arena lock in
//! every `malloc` and `free` that misses its per-thread cache: one idle preloaded thread made
//! malloc_heavy 18-27% slower on its own on an Intel VM (3% on an AMD one), most of what the thin
//! sampling mode cost there. So in that mode
//! a process that has one thread keeps it alone: the writer and the sampler are parked, and the
//! program's thread does their work itself at one of its sends (a sampled block, a mapping, a CUDA
//! call: few, in the thin mode) once 100 ms have passed or 4096 messages wait, as the writer thread
//! would have put a frame on disk. They start for real the moment the process has a second thread
//! (glibc's `__libc_single_threaded` turns false: the program's `pthread_create`, a library's
//! helper thread) and before anything that waits on the writer (the end of the trace, a flush the
//! program asked for, a file-size limit).
//!
//! What this gives up: while parked, a frame reaches the disk at a send, not when the program goes
//! quiet, so a SIGKILL loses what the program's thread sent since its last 100 ms; and the sampler's
//! readings come at sends, not every 100 ms of a program that does not allocate.
//!
//! Never: wait for the parked writer on the thread that holds it (a signal that came in the middle
//! of its work finds it taken and leaves it), or start a thread from the crash handler (it ends the
//! trace itself or not at all). An end reached from another handler (`_exit` in one) starts the
//! threads as any end does, unless the handler interrupted the parked writer's work: the trace is
//! then left as a killed process's.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use crate::channel::{self, HELPERS_PARKED};
use crate::probes::Sampler;
use crate::sys::{self, clock};
use crate::writer::{self, Pacing, Writer};

/// Messages sent while parked after which the program's thread drains the queue (a sixteenth of it).
const DRAIN_AT: u32 = 4096;
/// Time between two drains on the program's thread, as between two frames on disk of the writer's.
const PERIOD_NS: u64 = 100_000_000;
/// The longest `unpark` waits for a drain under way on another thread.
const START_WAIT: Duration = Duration::from_secs(1);
/// Stack below which a signal's handler does not end the trace itself: compressing the last frame
/// needs room, and the handler may run on a small alternate stack (the program's).
const HANDLER_STACK: usize = 96 << 10;

/// The parked helpers.
struct Parked {
    writer: Writer,
    pacing: Pacing,
    sampler: Sampler,
}

/// Only ever tried, never waited on while a signal may have interrupted its holder: a thread that
/// finds it held leaves the work to the holder.
static PARKED: Mutex<Option<Parked>> = Mutex::new(None);
/// The thread holding `PARKED` (its kernel id), so that it never waits on itself.
static HOLDER: AtomicU32 = AtomicU32::new(0);
static SENT: AtomicU32 = AtomicU32::new(0);
static NEXT_NS: AtomicU64 = AtomicU64::new(0);

/// Starts the writer and the sampler, now or (`park`, in a process with one thread) when they are
/// needed. An error when a thread could not be started.
pub fn start(writer: Writer, sampler: Sampler, park: bool) -> Result<(), String> {
    if park && sys::threads::process_single_threaded() == Some(true) {
        // Held only in a fork child whose parent was in the middle of a drain: no parking there.
        if let Some(mut slot) = take() {
            *slot = Some(Parked {
                writer,
                pacing: Pacing::new(),
                sampler,
            });
            SENT.store(0, Ordering::Relaxed);
            NEXT_NS.store(clock::monotonic_ns() + PERIOD_NS, Ordering::Relaxed);
            HELPERS_PARKED.store(true, Ordering::Release);
            return Ok(());
        }
    }
    spawn(writer, sampler)
}

fn spawn(writer: Writer, sampler: Sampler) -> Result<(), String> {
    // Helper threads inherit this mask: they must never take the host's signals.
    let old_mask = sys::block_signals_but_faults();
    let spawned = writer::spawn(writer).and_then(|()| sampler.spawn());
    sys::restore_signals(&old_mask);
    spawned.map_err(|e| format!("cannot start the shim's threads: {e}"))
}

/// After a send while parked: the helpers start if the process has a second thread now; else the
/// program's thread does their work if it is due (`force`: now, the queue being full).
pub fn after_send(force: bool) {
    let sent = SENT.load(Ordering::Relaxed) + 1;
    SENT.store(sent, Ordering::Relaxed);
    if sys::threads::process_single_threaded() != Some(true) {
        unpark();
        return;
    }
    if !force && sent < DRAIN_AT && clock::monotonic_ns() < NEXT_NS.load(Ordering::Relaxed) {
        return;
    }
    // Not the trace's owner: a vfork child, whose parent drains when it runs again.
    if channel::OWNER_PID.load(Ordering::Acquire) != sys::getpid() {
        return;
    }
    let Some(mut slot) = take() else { return };
    let Some(parked) = slot.as_mut() else { return };
    SENT.store(0, Ordering::Relaxed);
    NEXT_NS.store(clock::monotonic_ns() + PERIOD_NS, Ordering::Relaxed);
    // What the C code the writer calls keeps (zstd's contexts) comes from the shim's heap, as on
    // the writer's thread, which may own it later. The queue is drained before the sampler's
    // readings are sent: its sends wait while the queue is full, and this thread is the one that
    // empties it (a forced drain comes with a full queue).
    let alive = crate::record::guard::with_own_heap(|| {
        let Parked {
            writer,
            pacing,
            sampler,
        } = parked;
        writer.drain_here(pacing) && sampler.tick() && writer.drain_here(pacing)
    });
    if !alive {
        // The trace ended (the shim's heap ran dry, a write failed): nothing to start later.
        HELPERS_PARKED.store(false, Ordering::Release);
        *slot = None;
    }
}

/// Starts the parked helpers, if any, for a caller about to wait on the writer; true when the
/// writer runs on its own thread now (or never was parked).
pub fn unpark() -> bool {
    let deadline = clock::monotonic_ns() + START_WAIT.as_nanos() as u64;
    let mut slot = loop {
        if !HELPERS_PARKED.load(Ordering::Acquire) {
            return true;
        }
        if let Some(slot) = take() {
            break slot;
        }
        // Another thread's drain is short; this thread's own, interrupted by a signal whose handler
        // came here, cannot end while it waits.
        if HOLDER.load(Ordering::Acquire) == crate::record::guard::tid()
            || clock::monotonic_ns() >= deadline
        {
            return false;
        }
        sys::nap_signal_safe(Duration::from_micros(100));
    };
    // Out of memory, no thread could start: the writer ends the trace here, as its thread would.
    if crate::sys::own_heap::exhausted() {
        if let Some(parked) = slot.as_mut() {
            parked.writer.drain_here(&mut parked.pacing);
        }
        HELPERS_PARKED.store(false, Ordering::Release);
        *slot = None;
        return false;
    }
    HELPERS_PARKED.store(false, Ordering::Release);
    let Some(parked) = slot.take() else {
        return true;
    };
    drop(slot);
    match spawn(parked.writer, parked.sampler) {
        Ok(()) => true,
        Err(e) => {
            channel::fail(&e);
            false
        }
    }
}

/// From a signal's handler while parked: ends the trace on this thread, as the writer thread would
/// have (see `channel::end_on_signal`). False when that cannot be done here: the signal came in the
/// middle of the parked writer's own work, or the handler's stack is small.
pub fn end_on_signal(sig: i32) -> bool {
    if !HELPERS_PARKED.load(Ordering::Acquire) || handler_room() < HANDLER_STACK {
        return false;
    }
    let Some(mut slot) = take() else { return false };
    let Some(parked) = slot.as_mut() else {
        return false;
    };
    HELPERS_PARKED.store(false, Ordering::Release);
    // Inside the shim (the handler's caller was not: see `crash::can_end_here`), with what the C
    // code allocates from the shim's heap: the program's may be in any state.
    let inside = crate::record::guard::enter();
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::record::guard::with_own_heap(|| parked.writer.end_on_signal(sig))
    }));
    drop(inside);
    // Kept, not dropped: the handler frees nothing it need not.
    std::mem::forget(slot.take());
    ended.is_ok()
}

/// Bytes of stack left to a signal's handler: on an alternate stack, or on the thread's own.
fn handler_room() -> usize {
    if let Some(room) = crate::alt_stack::room_here() {
        return room;
    }
    let marker = 0u8;
    let here = std::ptr::addr_of!(marker) as usize;
    crate::record::guard::known_stack_low().map_or(0, |low| here.saturating_sub(low))
}

/// In a fork child: what the parent parked is the parent's (its file, its queue): forgotten, never
/// used or dropped here.
pub fn after_fork_in_child() {
    HELPERS_PARKED.store(false, Ordering::Relaxed);
    if let Some(mut slot) = take() {
        std::mem::forget(slot.take());
    }
}

/// The parked helpers' slot, for the calling thread alone; `None` when another thread (or this one,
/// interrupted by a signal) holds it.
fn take() -> Option<MutexGuard<'static, Option<Parked>>> {
    let slot = match PARKED.try_lock() {
        Ok(g) => g,
        // A panic in a drain: what it left is still the slot's to use.
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    HOLDER.store(crate::record::guard::tid(), Ordering::Release);
    Some(slot)
}
