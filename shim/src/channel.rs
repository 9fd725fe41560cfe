//! The channel every producer sends on, and the state they ask before recording: whether the heap,
//! mappings, NUMA calls and CUDA are being recorded now, the settings, the stacks already sent, the
//! one warning line. Below every producer (hooks, `record`, `cuda`, `python`, `torch`, `probes`) and
//! below the writer; the lifecycle above it (`session`) opens and closes what this module holds.
//!
//! States: `OFF` (disabled or not started), `RUNNING`, `STOPPED` (finished or failed; hooks only pass
//! through), `PENDING` (a fork child, or a process whose exec failed: the next recorded call starts a
//! new trace file), `STARTING` (one thread is starting it; others skip their event, counted dropped).
//!
//! A producer that finds the trace not started yet starts it (see [`Lifecycle`]): the channel reaches
//! the lifecycle through a trait that `session` implements, never by importing it, because the
//! lifecycle imports every producer.
//!
//! Never: block the host forever. Producers wait on a full channel (backpressure), but the writer
//! never waits on them, and every wait at exit has a deadline.
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::config::Config;
use crate::record::msg::Msg;
use crate::sys::leaked::Leaked;
use crate::sys::queue::{SendError, Sender};
use crate::sys::{self, clock};

pub(crate) const OFF: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const STOPPED: u8 = 2;
pub(crate) const PENDING: u8 = 3;
pub(crate) const STARTING: u8 = 4;

/// What a producer's first event starts, implemented by the lifecycle (`session`) for [`Session`].
pub(crate) trait Lifecycle {
    /// Starts the shim: the first allocation came before the library constructor ran.
    fn init();
    /// Opens a new trace (a fork child's, or after a failed exec) and goes to `RUNNING` or
    /// `STOPPED`; called in state `STARTING`.
    fn begin();
    /// A child made behind the shim's back (a raw `fork` system call) found the parent's channel
    /// full: start afresh, as a fork child does.
    fn restart_in_child();
    /// A message was sent while the helper threads are parked (see [`HELPERS_PARKED`]): they start,
    /// or the sending thread does their work, when due (`force`: now, the queue being full).
    fn parked_send(force: bool);
    /// Starts the parked helper threads before a wait on the writer; true when it runs.
    fn unpark() -> bool;
    /// From a signal's handler while the helpers are parked: ends the trace on this thread; false
    /// when that cannot be done here.
    fn end_parked_on_signal(sig: i32) -> bool;
}

/// The lifecycle the channel starts; `session` implements [`Lifecycle`] for it.
pub(crate) struct Session;

// The statics below are written by the lifecycle (start, fork, exec, end) and read by producers.
pub(crate) static STATE: AtomicU8 = AtomicU8::new(OFF);
/// The sending end, leaked on purpose: producers may hold a reference to it at any moment.
pub(crate) static SENDER: Leaked<Sender> = Leaked::none();
pub(crate) static OWNER_PID: AtomicU32 = AtomicU32::new(0);
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);
static WARNED: AtomicBool = AtomicBool::new(false);
/// On until the settings say otherwise: a library constructor that runs before the shim's own
/// (libstdc++'s emergency pool, a C++ library's static registry) allocates through the hooks, and
/// its first allocation starts the shim early (see [`active`]).
pub(crate) static HEAP_ON: AtomicBool = AtomicBool::new(true);
/// Set once `init` has begun, from the library constructor or from an earlier allocation.
pub(crate) static INIT_STARTED: AtomicBool = AtomicBool::new(false);
/// Set when the shim was loaded into a running process (`memshim attach`) rather than preloaded.
pub(crate) static LATE: AtomicBool = AtomicBool::new(false);
/// Set once the shim's own constructor has run.
pub(crate) static CONSTRUCTED: AtomicBool = AtomicBool::new(false);
/// True while the writer and the sampler wait to be started (see `on_demand`): each send then
/// asks whether they are needed.
pub(crate) static HELPERS_PARKED: AtomicBool = AtomicBool::new(false);
pub(crate) static MMAP_ON: AtomicBool = AtomicBool::new(false);
pub(crate) static CUDA_ON: AtomicBool = AtomicBool::new(false);
pub(crate) static CONFIG: OnceLock<Config> = OnceLock::new();
/// An exec's course: the writer that ended the trace for it waits on this.
pub(crate) static EXEC: AtomicU8 = AtomicU8::new(EXEC_NONE);
pub(crate) const EXEC_NONE: u8 = 0;
pub(crate) const EXEC_TRYING: u8 = 1;
pub(crate) const EXEC_FAILED: u8 = 2;
pub(crate) const EXEC_RESUMED: u8 = 3;
/// Set by the writer once the trace ended for want of memory is on disk.
pub(crate) static MEMORY_END_DONE: AtomicBool = AtomicBool::new(false);
/// The signal whose arrival asked the writer to end the trace now (0: none).
static SIGNAL_END: AtomicI32 = AtomicI32::new(0);
/// Set by the writer once that end is on disk.
static SIGNAL_END_DONE: AtomicBool = AtomicBool::new(false);
/// The longest a signal handler waits for the writer.
const SIGNAL_WAIT: Duration = Duration::from_secs(3);

/// Whether heap calls are to be recorded at all (`MEMSHIM_HEAP`): a load, asked before anything else.
#[inline(always)]
pub fn heap_enabled() -> bool {
    HEAP_ON.load(Ordering::Relaxed)
}

/// Whether heap events are being recorded now; starts a pending trace on first use.
#[inline]
pub fn heap_active() -> bool {
    HEAP_ON.load(Ordering::Relaxed) && active()
}

/// Whether heap calls are being counted now in the thin sampling mode, asked by a heap hook that
/// holds the guard (see `recorder::enter_heap`); starts a pending trace.
#[inline]
pub fn heap_counting_guarded() -> bool {
    match STATE.load(Ordering::Acquire) {
        RUNNING => true,
        _ => heap_active(),
    }
}

/// Whether mapping events are being recorded now.
#[inline]
pub fn mmap_active() -> bool {
    MMAP_ON.load(Ordering::Relaxed) && active()
}

/// Whether NUMA and affinity calls are being recorded now (with the heap: they are rare). Not
/// before the shim's own constructor has run: what libraries' constructors do before it is their
/// own set-up (libnuma probes the kernel's policies with `set_mempolicy`), not the program's
/// placement, whereas their allocations are memory the program holds and are recorded.
#[inline]
pub fn numa_active() -> bool {
    CONSTRUCTED.load(Ordering::Acquire) && active()
}

/// Whether CUDA interception is switched on (wrappers are handed out even before tracing starts).
#[inline]
pub fn cuda_enabled() -> bool {
    config().is_none_or(|c| c.cuda && !c.disabled)
}

/// Whether CUDA events are being recorded now.
#[inline]
pub fn cuda_active() -> bool {
    CUDA_ON.load(Ordering::Relaxed) && active()
}

#[inline]
fn active() -> bool {
    match STATE.load(Ordering::Acquire) {
        RUNNING => true,
        PENDING => start_pending(),
        STARTING => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            false
        }
        OFF if !INIT_STARTED.load(Ordering::Acquire) => start_early(),
        _ => false,
    }
}

/// The first allocation came before the shim's constructor ran (another library's constructor, run
/// earlier by the loader): start now, so that allocation and all after it are recorded.
#[cold]
fn start_early() -> bool {
    contained(<Session as Lifecycle>::init);
    STATE.load(Ordering::Acquire) == RUNNING
}

#[cold]
fn start_pending() -> bool {
    if STATE
        .compare_exchange(PENDING, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return STATE.load(Ordering::Acquire) == RUNNING;
    }
    contained(<Session as Lifecycle>::begin);
    STATE.load(Ordering::Acquire) == RUNNING
}

/// Runs a step of the lifecycle that a producer's call set off, inside a hook: a panic there must
/// not unwind into the hook's C caller (which aborts the program), so it stops tracing instead.
#[cold]
fn contained(step: fn()) {
    if std::panic::catch_unwind(step).is_err() {
        fail("internal error while starting the trace");
    }
}

/// The settings, once initialised.
#[inline]
pub fn config() -> Option<&'static Config> {
    CONFIG.get()
}

/// Naps of 50 us a process that does not own the trace waits on a full queue before it starts afresh.
const CHILD_NAPS: u32 = 2000;

/// Sends a message to the writer (see `sys::queue`), waiting while the queue is full. It never parks:
/// parking takes the thread's std handle, which a thread in its TLS destructors no longer has (a
/// free at thread exit would panic there), and registers a destructor under the loader's lock; so
/// it naps and looks again. A queue that stays full in a process that is not the trace's owner is a
/// child made behind the shim's back (an inline `fork` system call): it starts afresh.
#[inline]
pub fn send(msg: Msg) {
    let Some(tx) = SENDER.get() else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    // Not the owner: a child made by a raw fork gives up after a while (nobody reads its copy of
    // the queue), a vfork child sharing the parent's memory (whose writer reads on) gets through.
    let mut naps = 0u32;
    let full = || {
        if HELPERS_PARKED.load(Ordering::Acquire) {
            contained(|| <Session as Lifecycle>::parked_send(true));
        }
        if OWNER_PID.load(Ordering::Acquire) != sys::getpid() {
            naps += 1;
            if naps > CHILD_NAPS {
                return false;
            }
        }
        sys::nap_signal_safe(Duration::from_micros(50));
        true
    };
    match tx.send(msg, full) {
        Ok(()) if HELPERS_PARKED.load(Ordering::Relaxed) => {
            contained(|| <Session as Lifecycle>::parked_send(false));
        }
        Ok(()) => {}
        Err((SendError::GaveUp, _)) => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            contained(<Session as Lifecycle>::restart_in_child);
        }
        Err((SendError::Disconnected, _)) => {
            // The writer is gone (it failed, or the trace was closed): stop recording.
            DROPPED.fetch_add(1, Ordering::Relaxed);
            let _ = STATE.compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

/// The trace this process writes now and the clock reading its times count from, for the program's
/// own questions (see `hooks::api`); set by the lifecycle when it opens a trace. Leaked, one per trace
/// opened, like the sender: a lock here could be held by a thread that a fork left behind, and the
/// child's lifecycle would wait on it forever.
pub(crate) struct TraceInfo {
    pub path: std::path::PathBuf,
    pub clock_start_ns: u64,
}
static TRACE: Leaked<TraceInfo> = Leaked::none();
static FLUSH_ASKED: AtomicU64 = AtomicU64::new(0);
static FLUSHED: AtomicU64 = AtomicU64::new(0);

/// Called by the lifecycle with each new trace's path and clock start.
pub(crate) fn set_trace(path: std::path::PathBuf, clock_start_ns: u64) {
    TRACE.publish(TraceInfo {
        path,
        clock_start_ns,
    });
}

/// The trace being written by this process; `None` when it is not recording.
pub(crate) fn trace() -> Option<&'static TraceInfo> {
    if STATE.load(Ordering::Acquire) != RUNNING
        || OWNER_PID.load(Ordering::Acquire) != sys::getpid()
    {
        return None;
    }
    TRACE.get()
}

/// Asks the writer to put everything sent so far on disk and waits for it, up to `timeout`; true
/// when it is there. Sent through the same queue as events, so it waits for every event sent
/// before it, by any thread.
pub(crate) fn flush_now(timeout: Duration) -> bool {
    ask_writer(Msg::Flush, timeout)
}

/// The program is about to limit the size of the files it writes to `limit` bytes: asks the writer
/// to put what it has on disk and to take the trace's room while the file may still grow, and waits
/// for it (a second at most: past that, the trace keeps its frames in memory as under any limit).
pub(crate) fn before_size_limit(limit: u64) {
    // Room taken once serves every later limit: no second wait for the writer.
    if ROOM_TAKEN_BY.load(Ordering::Acquire) == sys::getpid() {
        return;
    }
    ask_writer(|seq| Msg::SizeLimit { seq, limit }, Duration::from_secs(1));
}

/// The process whose trace has taken its room (see `before_size_limit`); a fork child's own trace
/// has not.
static ROOM_TAKEN_BY: AtomicU32 = AtomicU32::new(0);

/// For the writer: this process's trace has its room.
pub(crate) fn room_taken() {
    ROOM_TAKEN_BY.store(sys::getpid(), Ordering::Release);
}

/// Sends the writer a request that it answers through `flushed`, and waits for the answer up to
/// `timeout`; true when it came.
fn ask_writer(request: impl FnOnce(u64) -> Msg, timeout: Duration) -> bool {
    if trace().is_none() || !<Session as Lifecycle>::unpark() {
        return false;
    }
    let seq = FLUSH_ASKED.fetch_add(1, Ordering::AcqRel) + 1;
    send(request(seq));
    sys::doorbell::ring();
    let deadline = clock::monotonic_ns() + timeout.as_nanos() as u64;
    while FLUSHED.load(Ordering::Acquire) < seq {
        if clock::monotonic_ns() >= deadline || STATE.load(Ordering::Acquire) != RUNNING {
            return false;
        }
        sys::nap_signal_safe(Duration::from_micros(200));
    }
    true
}

/// The writer has put everything up to flush request `seq` on disk.
pub(crate) fn flushed(seq: u64) {
    FLUSHED.fetch_max(seq, Ordering::AcqRel);
}

/// Events that could not be recorded so far.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// The shim's own heap ran dry: recording stops at once (each event may need memory), and the
/// writer ends the trace with a note (see `Writer::stop_for_memory`). Only atomics: it runs under
/// the heap's lock.
pub fn stop_recording() {
    let _ = STATE.compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Relaxed);
}

/// Counts events that could not be recorded.
pub fn count_dropped(n: u64) {
    DROPPED.fetch_add(n, Ordering::Relaxed);
}

/// For the writer: the trace that the shim's heap running dry ended is on disk (or failed).
pub fn memory_end_done() {
    MEMORY_END_DONE.store(true, Ordering::Release);
}

/// What became of the exec the trace was ended for, as the writer sees it.
pub enum ExecOutcome {
    /// Under way: if it succeeds, the writer is gone with the image.
    Trying,
    /// It failed: the trace is to go on.
    Failed,
    /// No exec (or the waiting was given up).
    None,
}

/// For the writer, after the end it wrote at an exec.
pub fn exec_outcome() -> ExecOutcome {
    match EXEC.load(Ordering::Acquire) {
        EXEC_TRYING => ExecOutcome::Trying,
        EXEC_FAILED => ExecOutcome::Failed,
        _ => ExecOutcome::None,
    }
}

/// For the writer: the end is taken back and the queue is read again (or, `false`, it could not be).
pub fn exec_resumed(ok: bool) {
    let _ = EXEC.compare_exchange(
        EXEC_FAILED,
        if ok { EXEC_RESUMED } else { EXEC_NONE },
        Ordering::AcqRel,
        Ordering::Relaxed,
    );
}

/// Stops tracing after an internal failure, keeping every real call working.
pub fn fail(why: &str) {
    STATE.store(STOPPED, Ordering::Release);
    warn(&format!("{why}; tracing stopped, the program continues"));
}

/// From a signal handler (see `crash`): has the writer put everything recorded on disk with an end
/// that names `sig`, and waits for it (with a deadline). Only atomics and `nanosleep`: nothing here
/// may take a lock or allocate.
pub fn end_on_signal(sig: i32) {
    if STATE.load(Ordering::Acquire) != RUNNING
        || OWNER_PID.load(Ordering::Acquire) != sys::getpid()
    {
        return;
    }
    // The first signal names the end; a second thread's crash waits for the same end.
    let _ = SIGNAL_END.compare_exchange(0, sig, Ordering::AcqRel, Ordering::Acquire);
    // Later events are not the program's last moment any more: stop recording them.
    STATE.store(STOPPED, Ordering::Release);
    // No writer thread to wait for: this thread ends the trace, or, when it cannot, the trace ends
    // as a killed process's.
    if HELPERS_PARKED.load(Ordering::Acquire) {
        <Session as Lifecycle>::end_parked_on_signal(sig);
        return;
    }
    sys::doorbell::ring();
    let deadline = clock::monotonic_ns() + SIGNAL_WAIT.as_nanos() as u64;
    while !SIGNAL_END_DONE.load(Ordering::Acquire) && clock::monotonic_ns() < deadline {
        sys::nap_signal_safe(Duration::from_millis(1));
    }
}

/// For the writer: the signal that asked it to end the trace now, if one did.
pub fn signal_end() -> Option<i32> {
    match SIGNAL_END.load(Ordering::Acquire) {
        0 => None,
        sig => Some(sig),
    }
}

/// For the writer: the end asked for by a signal is on disk.
pub fn signal_end_done() {
    SIGNAL_END_DONE.store(true, Ordering::Release);
}

/// Records a note in the trace (shown in the report), when this process is being traced.
pub fn note(text: &str) {
    if STATE.load(Ordering::Acquire) == RUNNING
        && OWNER_PID.load(Ordering::Acquire) == sys::getpid()
    {
        send(Msg::Record(memshim_trace::Record::Note(
            memshim_trace::Note {
                text: text.to_string(),
            },
        )));
    }
}

/// Prints `memshim[pid]: msg` on stderr, once per process for warnings.
pub fn warn(msg: &str) {
    if WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    // Problems are always said, quiet or not: a trace that stopped must not go unnoticed.
    print(msg);
}

/// Prints `memshim[pid]: msg` on stderr unless quiet (the line at exit naming the trace).
pub fn say(msg: &str) {
    if !config().is_some_and(|c| c.quiet) {
        print(msg);
    }
}

fn print(msg: &str) {
    let line = format!("memshim[{}]: {msg}\n", sys::getpid());
    sys::write_stderr(line.as_bytes());
}
