//! The process's performance counters (perf events): opened at start on the main thread with
//! `inherit`, so threads created later count too, and read at exit. Software counters (page faults,
//! context switches, CPU migrations) exist everywhere; hardware ones (cache references and misses,
//! last-level cache loads and misses) often cannot be opened in virtual machines or under a strict
//! `perf_event_paranoid`, and then the trace says why instead of giving a number.
//!
//! The counters' descriptors are close-on-exec: an exec'd program must not inherit them (it opens its
//! own). Never: touched on the hot path. The list is behind a mutex used at start, by the sampler
//! about once a second and at exit; a fork child does not read it (the counters are its parent's).
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use memshim_trace::Counter as Out;

use crate::probes::perf_fd::{Counter, Kind};

struct Opened {
    name: &'static str,
    counter: Result<Counter, String>,
}

static COUNTERS: OnceLock<Mutex<Vec<Opened>>> = OnceLock::new();
/// The process that opened them: a fork child inherits the descriptors but not the right to read
/// them as its own.
static OPENER: AtomicU32 = AtomicU32::new(0);

/// The kernel's event types and numbers (linux/perf_event.h).
fn events() -> Vec<(&'static str, Kind)> {
    const HARDWARE: u32 = 0;
    const SOFTWARE: u32 = 1;
    const HW_CACHE: u32 = 3;
    // Last-level cache, read operation, access or miss: id | op << 8 | result << 16.
    const LLC_READ: u64 = 2;
    let kind = |type_, config| Kind { type_, config };
    vec![
        ("page_faults_minor", kind(SOFTWARE, 5)),
        ("page_faults_major", kind(SOFTWARE, 6)),
        ("context_switches", kind(SOFTWARE, 3)),
        ("cpu_migrations", kind(SOFTWARE, 4)),
        ("cache_references", kind(HARDWARE, 2)),
        ("cache_misses", kind(HARDWARE, 3)),
        ("llc_loads", kind(HW_CACHE, LLC_READ)),
        ("llc_load_misses", kind(HW_CACHE, LLC_READ | 1 << 16)),
    ]
}

/// Below this soft `RLIMIT_NOFILE` no counter is opened.
const MIN_NOFILE: u64 = 64;

/// Opens and starts every counter on the calling thread (the main thread, at start), with
/// `inherit` (failures are kept, to be reported).
pub fn open() {
    // Each counter holds a descriptor for the whole run: with few to spare, they would be the
    // program's (a daemon that runs with RLIMIT_NOFILE at 4 must still be able to open its file).
    let spare = crate::sys::nofile_limit().is_none_or(|n| n >= MIN_NOFILE);
    let opened = events()
        .into_iter()
        .map(|(name, kind)| Opened {
            name,
            counter: if spare {
                start(kind).map_err(|e| reason(&e))
            } else {
                Err(format!(
                    "not opened: RLIMIT_NOFILE is below {MIN_NOFILE}, too few descriptors to spare"
                ))
            },
        })
        .collect();
    let _ = COUNTERS.set(Mutex::new(opened));
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

/// Page faults happen in the kernel: count them there when allowed to.
fn start(kind: Kind) -> std::io::Result<Counter> {
    Counter::open(kind, true).or_else(|_| Counter::open(kind, false))
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
