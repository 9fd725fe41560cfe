//! The process's performance counters (perf events): opened at start for the main thread with
//! `inherit`, so threads created later count too, and read at exit. Software counters (page faults,
//! context switches, CPU migrations) exist everywhere; hardware ones (cache references and misses,
//! last-level cache loads and misses) often cannot be opened in virtual machines or under a strict
//! `perf_event_paranoid`, and then the trace says why instead of giving a number.
//!
//! The counters' descriptors are close-on-exec: an exec'd program must not inherit them (it opens its
//! own). Never: touched on the hot path. The list is behind a mutex used at start, by the sampler
//! about once a second and at exit; a fork child does not read it (the counters are its parent's).
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use memshim_trace::Counter as Out;
use perf_event::events::{Cache, CacheOp, CacheResult, Event, Hardware, Software, WhichCache};
use perf_event::{Builder, Counter};

struct Opened {
    name: &'static str,
    counter: Result<Counter, String>,
}

static COUNTERS: OnceLock<Mutex<Vec<Opened>>> = OnceLock::new();
/// The process that opened them: a fork child inherits the descriptors but not the right to read
/// them as its own.
static OPENER: AtomicU32 = AtomicU32::new(0);

fn events() -> Vec<(&'static str, Event)> {
    let llc = |result| Cache {
        which: WhichCache::LL,
        operation: CacheOp::READ,
        result,
    };
    vec![
        ("page_faults_minor", Software::PAGE_FAULTS_MIN.into()),
        ("page_faults_major", Software::PAGE_FAULTS_MAJ.into()),
        ("context_switches", Software::CONTEXT_SWITCHES.into()),
        ("cpu_migrations", Software::CPU_MIGRATIONS.into()),
        ("cache_references", Hardware::CACHE_REFERENCES.into()),
        ("cache_misses", Hardware::CACHE_MISSES.into()),
        ("llc_loads", llc(CacheResult::ACCESS).into()),
        ("llc_load_misses", llc(CacheResult::MISS).into()),
    ]
}

/// Opens and starts every counter for the calling thread and the threads it goes on to create
/// (failures are kept, to be reported).
///
/// They are opened from a helper thread of the shim's, aimed at the caller: the perf-event crate
/// keeps a thread-local whose destructor glibc registers in a block it allocates. Made on the
/// program's thread, that block would be freed when the thread exits, a free of a block never seen
/// allocated, which the thin sampling mode's counts cannot tell from the program's own.
pub fn open() {
    static DONE: AtomicBool = AtomicBool::new(false);
    let target = crate::sys::gettid() as libc::pid_t;
    let spawned = crate::threads::spawn(c"memshim-perf", move || {
        let opened = events()
            .into_iter()
            .map(|(name, event)| Opened {
                name,
                counter: start(event, target).map_err(|e| reason(&e)),
            })
            .collect();
        let _ = COUNTERS.set(Mutex::new(opened));
        DONE.store(true, Ordering::Release);
    });
    if spawned.is_err() {
        return;
    }
    // A few hundred microseconds; no channel or condvar, which would leave thread-locals of their
    // own on this thread.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !DONE.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    OPENER.store(crate::sys::getpid(), Ordering::Relaxed);
}

/// The totals so far of the counters that can be read, for the sampler; `None` in a process that
/// did not open them (a fork child). With `inherit`, reading the parent's counter sums its children
/// (the threads) as they run, so each sample covers every thread.
pub fn sample() -> Option<Vec<Out>> {
    if OPENER.load(Ordering::Relaxed) != crate::sys::getpid() {
        return None;
    }
    let values: Vec<Out> = read().into_iter().filter(|c| c.value.is_some()).collect();
    Some(values).filter(|v| !v.is_empty())
}

fn start(event: Event, target: libc::pid_t) -> std::io::Result<Counter> {
    let build = |kernel: bool| {
        let mut b = Builder::new().kind(event.clone()).observe_pid(target);
        b.inherit(true);
        // Page faults happen in the kernel: count them there when allowed to.
        b.exclude_kernel(!kernel);
        b.build()
    };
    let mut c = build(true).or_else(|_| build(false))?;
    crate::sys::set_cloexec(c.as_raw_fd())?;
    c.enable()?;
    Ok(c)
}

fn reason(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
            "this machine does not expose the counter (a virtual machine, or no such hardware event)".into()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "not permitted: /proc/sys/kernel/perf_event_paranoid is too strict for this user".into()
        }
        _ => format!("cannot be opened: {e}"),
    }
}

/// Every counter's total so far.
pub fn read() -> Vec<Out> {
    let Some(m) = COUNTERS.get() else {
        return Vec::new();
    };
    let Ok(mut list) = m.lock() else {
        return Vec::new();
    };
    list.iter_mut()
        .map(|o| match &mut o.counter {
            Ok(c) => match c.read() {
                Ok(v) => Out {
                    name: o.name.into(),
                    value: Some(v),
                    error: None,
                },
                Err(e) => Out {
                    name: o.name.into(),
                    value: None,
                    error: Some(reason(&e)),
                },
            },
            Err(why) => Out {
                name: o.name.into(),
                value: None,
                error: Some(why.clone()),
            },
        })
        .collect()
}
