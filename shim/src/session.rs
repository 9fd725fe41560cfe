//! The life of one process's trace: start, the channel producers send on, fork, exec and the end.
//!
//! States: `OFF` (disabled or not started), `RUNNING`, `STOPPED` (finished or failed; hooks only pass
//! through), `PENDING` (a fork child, or a process whose exec failed: the next recorded call starts a
//! new trace file), `STARTING` (one thread is starting it; others skip their event, counted dropped).
//!
//! Never: block the host forever. Producers wait on a full channel (backpressure), but the writer
//! never waits on them, and every wait at exit has a deadline.
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use std::sync::OnceLock;
use std::time::Duration;

use crossbeam_channel::{bounded, Sender};
use memshim_trace::{Clock, EndReason, Header, TraceWriter};

use crate::config::Config;
use crate::msg::Msg;
use crate::{clock, modules, output, real, sampler, stacks, sys, writer};

const OFF: u8 = 0;
const RUNNING: u8 = 1;
const STOPPED: u8 = 2;
const PENDING: u8 = 3;
const STARTING: u8 = 4;

/// Messages the channel holds before producers wait.
const CHANNEL_CAPACITY: usize = 1 << 16;
/// The longest the exiting thread waits for the writer to finish the trace.
const EXIT_WAIT: Duration = Duration::from_secs(10);

static STATE: AtomicU8 = AtomicU8::new(OFF);
static SENDER: AtomicPtr<Sender<Msg>> = AtomicPtr::new(std::ptr::null_mut());
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static FORKED: AtomicBool = AtomicBool::new(false);
static WARNED: AtomicBool = AtomicBool::new(false);
/// On until the settings say otherwise: a library constructor that runs before the shim's own
/// (libstdc++'s emergency pool, a C++ library's static registry) allocates through the hooks, and
/// its first allocation starts the shim early (see [`active`]).
static HEAP_ON: AtomicBool = AtomicBool::new(true);
/// Set once `init` has begun, from the library constructor or from an earlier allocation.
static INIT_STARTED: AtomicBool = AtomicBool::new(false);
/// Set once the shim's own constructor has run.
static CONSTRUCTED: AtomicBool = AtomicBool::new(false);
static MMAP_ON: AtomicBool = AtomicBool::new(false);
static CUDA_ON: AtomicBool = AtomicBool::new(false);
static CONFIG: OnceLock<Config> = OnceLock::new();
/// The signal whose arrival asked the writer to end the trace now (0: none).
static SIGNAL_END: AtomicI32 = AtomicI32::new(0);
/// Set by the writer once that end is on disk.
static SIGNAL_END_DONE: AtomicBool = AtomicBool::new(false);
/// The longest a signal handler waits for the writer.
const SIGNAL_WAIT: Duration = Duration::from_secs(3);
static SEEN: OnceLock<stacks::SeenTable> = OnceLock::new();
/// An exec's course: the writer that ended the trace for it waits on this.
static EXEC: AtomicU8 = AtomicU8::new(EXEC_NONE);
const EXEC_NONE: u8 = 0;
const EXEC_TRYING: u8 = 1;
const EXEC_FAILED: u8 = 2;
const EXEC_RESUMED: u8 = 3;
/// Set by the writer once the trace ended for want of memory is on disk.
static MEMORY_END_DONE: AtomicBool = AtomicBool::new(false);

/// Called from the library constructor, or earlier from the first allocation of another library's
/// constructor; only the first call does anything.
pub fn init() {
    if INIT_STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    // A setuid or otherwise secure-execution process is left alone: its trace would be written with
    // privileges the user who set MEMSHIM_OUTPUT does not have.
    if sys::secure_exec() {
        HEAP_ON.store(false, Ordering::Relaxed);
        return;
    }
    // A panic inside the shim is caught where it happens and stops tracing with one warning line;
    // the default hook would print its message and backtrace into the program's stderr first.
    std::panic::set_hook(Box::new(|_| {}));
    let cfg = CONFIG.get_or_init(Config::from_env);
    for w in &cfg.warnings {
        warn(w);
    }
    if cfg.disabled {
        HEAP_ON.store(false, Ordering::Relaxed);
        return;
    }
    if !crate::guard::init() {
        HEAP_ON.store(false, Ordering::Relaxed);
        warn("no thread-specific keys are left in this process; this process is not traced");
        return;
    }
    // The keys exist only now, so the caller's guard was inert: what starting allocates passes through.
    let _inside = crate::guard::enter();
    crate::own_heap::init(stop_recording);
    // glibc's allocator gives its main arena to the first thread that calls it and a new arena (64
    // MiB of address space) to every other: that must be this thread (the program's), not a
    // helper thread of the shim's that would otherwise be first (the shim's own calls go to
    // `own_heap`).
    real::free(real::malloc(1));
    let _ = exe_path();
    let mods = modules::scan("");
    if let Some((lo, hi)) = modules::exec_range_of(&mods, init as fn() as usize as u64) {
        stacks::set_self_range(lo as usize, hi as usize);
    }
    crate::unwind::init(&cfg.unwind);
    crate::sampling::init(cfg.sample_bytes, cfg.sample_thin);
    if let Some(table) = crate::seen_table::allocate() {
        let _ = SEEN.set(table);
    }
    HEAP_ON.store(cfg.heap, Ordering::Relaxed);
    // An allocator loaded before the shim serves the program's heap calls without the shim seeing
    // them, and maps its arenas through the shim's mmap hook, often holding its own locks (a stack
    // captured there can wait on them): its mappings are not the program's, so none are recorded.
    let foreign = crate::real::foreign_malloc();
    MMAP_ON.store(cfg.mmap && foreign.is_none(), Ordering::Relaxed);
    CUDA_ON.store(cfg.cuda, Ordering::Relaxed);
    sys::atfork_child(after_fork_in_child);
    // Registered first, so run last: after the program's own quick_exit handlers, whose
    // allocations are then in the trace.
    sys::at_quick_exit(end_at_quick_exit);
    crate::counters::open();
    crate::crash::install();
    STATE.store(STARTING, Ordering::SeqCst);
    begin();
    if let Some(lib) = foreign {
        let text = format!(
            "the program's malloc is {lib}'s, loaded before libmemshim.so: its heap calls do not reach memshim and anonymous mappings are not recorded; put libmemshim.so first in LD_PRELOAD to trace the heap"
        );
        warn(&text);
        send(Msg::Record(memshim_trace::Record::Note(
            memshim_trace::Note { text },
        )));
    }
}

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

/// Called by the library constructor.
pub fn constructed() {
    CONSTRUCTED.store(true, Ordering::Release);
    init();
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
    init();
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
    begin();
    STATE.load(Ordering::Acquire) == RUNNING
}

/// Opens the trace, spawns the writer and sampler, and goes to RUNNING (or STOPPED with a warning).
fn begin() {
    match open_trace() {
        Ok(()) => STATE.store(RUNNING, Ordering::Release),
        Err(e) => {
            STATE.store(STOPPED, Ordering::Release);
            warn(&format!("{e}; this process is not traced"));
        }
    }
}

fn open_trace() -> Result<(), String> {
    let cfg = CONFIG.get().ok_or("the shim was not initialised")?;
    let pid = sys::getpid();
    let exe = exe_path();
    let argv = sys::read_proc("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let header = Header {
        pid,
        ppid: sys::getppid(),
        exe: exe.clone(),
        argv,
        hostname: sys::hostname(),
        start_unix_ns: clock::realtime_ns(),
        clock: Clock::Monotonic,
        clock_start_ns: clock::monotonic_ns(),
        page_size: sys::page_size(),
        shim_version: env!("CARGO_PKG_VERSION").to_string(),
        stack_depth: cfg.stack_depth as u32,
        forked: FORKED.load(Ordering::Relaxed),
    };
    let host = header.hostname.clone();
    let rank = cfg.rank.as_ref().map(|r| (host.as_str(), r.rank));
    let (file, path) = output::create(&cfg.output_dir, &exe, pid, rank)?;
    let out = TraceWriter::new(file, &header, cfg.compress)
        .map_err(|e| format!("cannot write the trace file {}: {e}", path.display()))?;
    let initial_modules = modules::scan(&exe);
    let python = crate::python::detect(&initial_modules, cfg.python);
    let (tx, rx) = bounded(CHANNEL_CAPACITY);
    let sampler_tx = tx.clone();
    // Helper threads inherit this mask: they must never take the host's signals.
    let old_mask = sys::block_all_signals();
    let spawned = writer::spawn(writer::Writer::new(
        rx,
        out,
        path,
        initial_modules,
        cfg.clone(),
        pid,
    ))
    .and_then(|()| sampler::spawn(sampler_tx, exe, pid));
    sys::restore_signals(&old_mask);
    spawned.map_err(|e| format!("cannot start the shim's threads: {e}"))?;
    // The sender is leaked on purpose: producers may hold a reference to it at any moment, and a
    // fork child abandons it (its locks may have been held at fork) for a fresh one.
    SENDER.store(Box::into_raw(Box::new(tx)), Ordering::Release);
    if let Some(p) = python.or_else(crate::python::described) {
        send(Msg::Record(memshim_trace::Record::Python(p)));
    }
    // The baseline: what was counted before this trace began (a fork child's inheritance).
    send_heap_totals();
    OWNER_PID.store(pid, Ordering::Release);
    Ok(())
}

/// The settings, once initialised.
#[inline]
pub fn config() -> Option<&'static Config> {
    CONFIG.get()
}

/// True when `hash` is a stack the writer has not been sent yet.
#[inline]
pub fn first_sighting(hash: u64) -> bool {
    SEEN.get().is_none_or(|t| t.first_sighting(hash))
}

/// Sends a message to the writer, waiting while the channel is full. It never parks on the channel:
/// crossbeam's parking takes the thread's std handle, which a thread in its TLS destructors no
/// longer has (a free at thread exit would panic there), and registers a destructor under the
/// loader's lock; so it naps and tries again. A full channel in a process that is not the trace's
/// owner is a child made behind the shim's back (an inline `fork` system call): it starts afresh.
#[inline]
pub fn send(msg: Msg) {
    let p = SENDER.load(Ordering::Acquire);
    if p.is_null() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: a non-null SENDER points to a leaked Box that is never freed.
    #[allow(unsafe_code)]
    let tx = unsafe { &*p };
    let mut msg = msg;
    loop {
        match tx.try_send(msg) {
            Ok(()) => return,
            Err(crossbeam_channel::TrySendError::Full(m)) => {
                if OWNER_PID.load(Ordering::Acquire) != sys::getpid() {
                    DROPPED.fetch_add(1, Ordering::Relaxed);
                    after_fork_in_child();
                    return;
                }
                msg = m;
                sys::nap_signal_safe(Duration::from_micros(50));
            }
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => {
                // The writer is gone (it failed, or the trace was closed): stop recording.
                DROPPED.fetch_add(1, Ordering::Relaxed);
                let _ =
                    STATE.compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// Events that could not be recorded so far.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// The shim's own heap ran dry: recording stops at once (each event may need memory), and the
/// writer ends the trace with a note (see `Writer::stop_for_memory`). Only atomics: it runs under
/// the heap's lock.
fn stop_recording() {
    let _ = STATE.compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Relaxed);
}

/// For the writer: the trace that the shim's heap running dry ended is on disk (or failed).
pub fn memory_end_done() {
    MEMORY_END_DONE.store(true, Ordering::Release);
}

/// Counts events that could not be recorded.
pub fn count_dropped(n: u64) {
    DROPPED.fetch_add(n, Ordering::Relaxed);
}

/// Stops tracing after an internal failure, keeping every real call working.
pub fn fail(why: &str) {
    STATE.store(STOPPED, Ordering::Release);
    warn(&format!("{why}; tracing stopped, the program continues"));
}

/// Closes the trace: records the final module map, then waits (with a deadline) for the writer to
/// put everything on disk. Does nothing in a process that does not own the trace (a vfork child).
pub fn finish(reason: EndReason) -> bool {
    if OWNER_PID.load(Ordering::Acquire) != sys::getpid() {
        return false;
    }
    if wait_for_memory_end() {
        return false;
    }
    if STATE
        .compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    // The loader's lock is free here (glibc releases it before running destructors).
    send(Msg::Modules(modules::scan(&exe_path())));
    // CUPTI's partly filled buffers, while the channel still takes them (a no-op without CUPTI).
    crate::cuda::cupti::flush(true);
    send_heap_totals();
    if !FORKED.load(Ordering::Relaxed) {
        send(Msg::Record(memshim_trace::Record::Counters(
            crate::counters::read(),
        )));
    }
    let (ack_tx, ack_rx) = bounded(1);
    send(Msg::Shutdown {
        reason,
        ack: ack_tx,
    });
    let _ = ack_rx.recv_timeout(EXIT_WAIT);
    // The heap may have run dry on the way: the writer then drops the request and ends the trace.
    wait_for_memory_end();
    true
}

/// When the shim's heap ran dry (recording stopped, the writer ending the trace itself), waits for
/// that end to be on disk (with a deadline); false when it did not run dry.
fn wait_for_memory_end() -> bool {
    if !crate::own_heap::exhausted() {
        return false;
    }
    let deadline = clock::monotonic_ns() + EXIT_WAIT.as_nanos() as u64;
    while !MEMORY_END_DONE.load(Ordering::Acquire) && clock::monotonic_ns() < deadline {
        sys::nap_signal_safe(Duration::from_millis(1));
    }
    true
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

/// In the thin sampling mode, sends the running totals of every allocation and free.
pub fn send_heap_totals() {
    if let Some(r) = crate::heap_counts::reading() {
        send(Msg::Record(r));
    }
}

/// Sends the current module map (the writer records what changed), when this process is traced.
pub fn record_modules() {
    if STATE.load(Ordering::Acquire) != RUNNING
        || OWNER_PID.load(Ordering::Acquire) != sys::getpid()
    {
        return;
    }
    send(Msg::Modules(modules::scan(&exe_path())));
}

/// The executable's path, read once: `/proc/self/exe` no longer answers once the main thread has
/// left with `pthread_exit`, and the path is the same for the whole image (a fork child's too).
fn exe_path() -> String {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| {
        std::fs::read_link("/proc/self/exe")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
    .clone()
}

/// Before exec: the trace gets its end so nothing is lost when the image is replaced; the writer
/// then waits for the outcome (see [`after_failed_exec`]).
pub fn before_exec() -> bool {
    EXEC.store(EXEC_TRYING, Ordering::Release);
    let closed = finish(EndReason::Exec);
    if !closed {
        EXEC.store(EXEC_NONE, Ordering::Release);
    }
    closed
}

/// After a failed exec: the process goes on in the same trace, the end written before the exec
/// taken back by the writer; should the writer not manage that, the next call starts a new trace.
pub fn after_failed_exec(closed: bool) {
    if !closed {
        return;
    }
    EXEC.store(EXEC_FAILED, Ordering::Release);
    let deadline = clock::monotonic_ns() + EXIT_WAIT.as_nanos() as u64;
    while EXEC.load(Ordering::Acquire) == EXEC_FAILED && clock::monotonic_ns() < deadline {
        sys::nap_signal_safe(Duration::from_micros(200));
    }
    if EXEC.swap(EXEC_NONE, Ordering::AcqRel) == EXEC_RESUMED {
        STATE.store(RUNNING, Ordering::Release);
    } else {
        SENDER.store(std::ptr::null_mut(), Ordering::Release);
        STATE.store(PENDING, Ordering::Release);
    }
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

/// Runs in the child after fork: the parent's channel and threads are not ours; start afresh lazily.
extern "C" fn after_fork_in_child() {
    crate::guard::reset_tid();
    crate::threads::after_fork_in_child();
    crate::heap_counts::after_fork_in_child();
    if matches!(STATE.load(Ordering::Relaxed), RUNNING | PENDING | STARTING) {
        SENDER.store(std::ptr::null_mut(), Ordering::Relaxed);
        OWNER_PID.store(0, Ordering::Relaxed);
        FORKED.store(true, Ordering::Relaxed);
        DROPPED.store(0, Ordering::Relaxed);
        stacks::new_epoch();
        crate::python::after_fork();
        STATE.store(PENDING, Ordering::Release);
    }
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

/// `quick_exit` ends the process through glibc's internal `_exit`, which no hook sees.
extern "C" fn end_at_quick_exit() {
    crate::recorder::lifecycle(|| finish(EndReason::QuickExit));
}

/// In a process made by a raw `clone` or `SYS_fork`, which runs no fork handler: the same fresh
/// start as a fork child's.
pub fn after_raw_fork() {
    crate::own_heap::after_raw_fork();
    after_fork_in_child();
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
