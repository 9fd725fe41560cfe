//! The life of one process's trace above the channel: start, fork, exec and the end. It opens the
//! trace file, starts the writer and the probes' thread, and hands producers the channel (see
//! `channel`, which holds the state this module moves between).
//!
//! Never: block the host forever. Every wait at exit has a deadline.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use memshim_trace::{Clock, EndReason, Header, TraceWriter};

use crate::channel::{
    self, send, warn, Lifecycle, Session, CONFIG, CONSTRUCTED, CUDA_ON, DROPPED, EXEC, EXEC_FAILED,
    EXEC_NONE, EXEC_RESUMED, EXEC_TRYING, HEAP_ON, INIT_STARTED, LATE, MEMORY_END_DONE, MMAP_ON,
    OWNER_PID, PENDING, RUNNING, SENDER, STARTING, STATE, STOPPED,
};
use crate::config::Config;
use crate::record::msg::Msg;
use crate::{
    on_demand, probes, probes::modules, record::stacks, sys, sys::clock, writer, writer::output,
};

/// Messages the channel holds before producers wait.
const CHANNEL_CAPACITY: usize = 1 << 16;
/// The longest the exiting thread waits for the writer to finish the trace.
const EXIT_WAIT: Duration = Duration::from_secs(10);

static FORKED: AtomicBool = AtomicBool::new(false);

/// Called from the library constructor, or earlier from the first allocation of another library's
/// constructor; only the first call does anything.
pub fn init() {
    if INIT_STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    start();
}

/// Starts tracing in a process that was running before the shim was loaded (`memshim attach`),
/// with `cfg` for its settings; false when this process already has settings (it is traced, or
/// was attached before).
pub fn start_attached(cfg: Config) -> bool {
    if CONFIG.set(cfg).is_err() {
        return false;
    }
    start();
    true
}

fn start() {
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
    if !crate::record::guard::init(crate::channel::LATE.load(Ordering::Acquire)) {
        HEAP_ON.store(false, Ordering::Relaxed);
        warn("no thread-specific keys are left in this process; this process is not traced");
        return;
    }
    // The keys exist only now, so the caller's guard was inert: what starting allocates passes through.
    let _inside = crate::record::guard::enter();
    crate::sys::own_heap::init(crate::channel::stop_recording);
    // glibc's allocator gives its main arena to the first thread that calls it and a new arena (64
    // MiB of address space) to every other: that must be this thread (the program's), not a
    // helper thread of the shim's that would otherwise be first (the shim's own calls go to
    // `own_heap`).
    sys::real::free(sys::real::malloc(1));
    let _ = exe_path();
    let mods = modules::scan("");
    if let Some((lo, hi)) = modules::exec_range_of(&mods, init as fn() as usize as u64) {
        stacks::set_self_range(lo as usize, hi as usize);
    }
    crate::record::unwind::init(&cfg.unwind);
    crate::record::sampling::init(cfg.sample_bytes, cfg.sample_thin);
    sys::threads::find_single_threaded_flag();
    stacks::seen_table::install();
    HEAP_ON.store(cfg.heap, Ordering::Relaxed);
    // An allocator loaded before the shim serves the program's heap calls without the shim seeing
    // them, and maps its arenas through the shim's mmap hook, often holding its own locks (a stack
    // captured there can wait on them): its mappings are not the program's, so none are recorded.
    // Attached late, the global scope's malloc is the C library's, not an allocator in front of
    // the shim; the slots redirected (see `attach`) are the ones bound to what the shim calls.
    let foreign = if LATE.load(Ordering::Acquire) {
        None
    } else {
        crate::sys::real::foreign_malloc()
    };
    MMAP_ON.store(cfg.mmap && foreign.is_none(), Ordering::Relaxed);
    CUDA_ON.store(cfg.cuda, Ordering::Relaxed);
    sys::atfork_child(after_fork_in_child);
    // Registered first, so run last: after the program's own quick_exit handlers, whose
    // allocations are then in the trace.
    sys::at_quick_exit(end_at_quick_exit);
    crate::probes::counters::open();
    // A process attached to keeps its own signal dispositions: the handlers that complete the trace
    // at a crash rely on the sigaction hooks, which only a preloaded shim has.
    if !LATE.load(Ordering::Acquire) {
        crate::crash::install();
    }
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

/// Called by the library constructor.
pub fn constructed() {
    CONSTRUCTED.store(true, Ordering::Release);
    if !INIT_STARTED.load(Ordering::Acquire) && loaded_late() {
        // Nothing reaches the hooks until `memshim attach` redirects the program's calls, and it
        // starts the trace then, with its settings (the process's environment has none).
        LATE.store(true, Ordering::Release);
        INIT_STARTED.store(true, Ordering::Release);
        return;
    }
    init();
}

/// Whether the shim was loaded into a running process (by `memshim attach`) instead of in front of
/// it: neither `LD_PRELOAD` nor `/etc/ld.so.preload` names its file. (A lookup in the global scope
/// cannot tell: from inside a library, `dlsym(RTLD_DEFAULT)` searches the library's own scope too.)
fn loaded_late() -> bool {
    let Some(own) = sys::real::own_path() else {
        return false;
    };
    let own = own.rsplit('/').next().unwrap_or(&own).to_string();
    let names = |list: &str| {
        list.split([':', ' ', '\t', '\n'])
            .any(|p| !p.is_empty() && p.rsplit('/').next() == Some(own.as_str()))
    };
    let env = std::env::var("LD_PRELOAD").unwrap_or_default();
    let etc = std::fs::read_to_string("/etc/ld.so.preload").unwrap_or_default();
    !names(&env) && !names(&etc)
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
    let (file, path) = output::naming::create(&cfg.output_dir, &exe, pid, rank)?;
    channel::set_trace(path.clone(), header.clock_start_ns);
    let out = TraceWriter::new(file, &header, cfg.compress)
        .map_err(|e| format!("cannot write the trace file {}: {e}", path.display()))?;
    let initial_modules = modules::scan(&exe);
    let python = crate::python::detect(&initial_modules, cfg.python);
    let (tx, rx) = crate::sys::queue::bounded(CHANNEL_CAPACITY);
    let mut writer_cfg = cfg.clone();
    if header.forked {
        // A fork child's frames are its parent's modules: `memshim report` names them offline
        // unless symbolizing in the child was asked for by name (see `Config::symbolize_forked`).
        writer_cfg.symbolize = cfg.symbolize_forked;
    }
    let writer = writer::Writer::new(rx, out, path, initial_modules, writer_cfg, pid);
    let sampler = probes::Sampler::new(tx.clone(), exe, pid);
    // Parked in the thin sampling mode, where the program's thread has little of their work to do
    // (see `on_demand`); not in a process attached to, which has threads of its own.
    let park = crate::record::sampling::mean() > 0 && !LATE.load(Ordering::Acquire);
    on_demand::start(writer, sampler, park)?;
    // The sender is leaked on purpose: producers may hold a reference to it at any moment, and a
    // fork child abandons it (its locks may have been held at fork) for a fresh one.
    SENDER.publish(tx);
    if let Some(p) = python.or_else(crate::python::described) {
        send(Msg::Record(memshim_trace::Record::Python(p)));
    }
    // The baseline: what was counted before this trace began (a fork child's inheritance).
    send_heap_totals();
    OWNER_PID.store(pid, Ordering::Release);
    Ok(())
}

/// Closes the trace: records the final module map, then waits (with a deadline) for the writer to
/// put everything on disk. Does nothing in a process that does not own the trace (a vfork child).
pub fn finish(reason: EndReason) -> bool {
    if OWNER_PID.load(Ordering::Acquire) != sys::getpid() {
        return false;
    }
    // Every end below waits on the writer's thread. One that cannot start (this thread was in the
    // middle of the parked writer's work when a signal's handler came here) leaves the trace as a
    // killed process's, rather than wait for an end that cannot come.
    if !on_demand::unpark() && channel::HELPERS_PARKED.load(Ordering::Acquire) {
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
            crate::probes::counters::read(),
        )));
    }
    let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
    send(Msg::Shutdown {
        reason,
        ack: ack_tx,
    });
    // The writer may be in its longest nap: every millisecond here is one more the program's other
    // threads run after the program tore itself down (see `sys::doorbell`).
    sys::doorbell::ring();
    let _ = ack_rx.recv_timeout(EXIT_WAIT);
    // The heap may have run dry on the way: the writer then drops the request and ends the trace.
    wait_for_memory_end();
    true
}

/// When the shim's heap ran dry (recording stopped, the writer ending the trace itself), waits for
/// that end to be on disk (with a deadline); false when it did not run dry.
fn wait_for_memory_end() -> bool {
    if !crate::sys::own_heap::exhausted() {
        return false;
    }
    let deadline = clock::monotonic_ns() + EXIT_WAIT.as_nanos() as u64;
    while !MEMORY_END_DONE.load(Ordering::Acquire) && clock::monotonic_ns() < deadline {
        sys::nap_signal_safe(Duration::from_millis(1));
    }
    true
}

/// In the thin sampling mode, sends the running totals of every allocation and free.
pub fn send_heap_totals() {
    if let Some(r) = crate::record::sampling::totals_record() {
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
        SENDER.forget(Ordering::Release);
        STATE.store(PENDING, Ordering::Release);
    }
}

/// Runs in the child after fork: the parent's channel and threads are not ours; start afresh lazily.
extern "C" fn after_fork_in_child() {
    crate::record::guard::reset_tid();
    crate::sys::owned_fds::after_fork_in_child();
    crate::sys::threads::after_fork_in_child();
    crate::record::sampling::thin_totals::after_fork_in_child();
    on_demand::after_fork_in_child();
    if matches!(STATE.load(Ordering::Relaxed), RUNNING | PENDING | STARTING) {
        SENDER.forget(Ordering::Relaxed);
        OWNER_PID.store(0, Ordering::Relaxed);
        FORKED.store(true, Ordering::Relaxed);
        DROPPED.store(0, Ordering::Relaxed);
        stacks::new_epoch();
        crate::python::after_fork();
        STATE.store(PENDING, Ordering::Release);
    }
}

/// `quick_exit` ends the process through glibc's internal `_exit`, which no hook sees.
extern "C" fn end_at_quick_exit() {
    crate::record::recorder::lifecycle(|| finish(EndReason::QuickExit));
}

/// In a process made by a raw `clone` or `SYS_fork`, which runs no fork handler: the same fresh
/// start as a fork child's.
pub fn after_raw_fork() {
    crate::sys::own_heap::after_raw_fork();
    after_fork_in_child();
}

impl Lifecycle for Session {
    fn init() {
        init();
    }

    fn begin() {
        begin();
    }

    fn restart_in_child() {
        after_fork_in_child();
    }

    fn parked_send(force: bool) {
        on_demand::after_send(force);
    }

    fn unpark() -> bool {
        on_demand::unpark()
    }

    fn end_parked_on_signal(sig: i32) -> bool {
        on_demand::end_on_signal(sig)
    }
}
