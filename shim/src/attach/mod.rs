//! Tracing a process that was already running (`memshim attach`): the CLI makes the process
//! `dlopen` the shim, whose constructor sees it came late and stays idle (see
//! `session::constructed`); then it calls [`attach`], which starts the trace with the settings the
//! CLI passed and redirects the malloc family and anonymous mappings already bound in every loaded
//! object to the hooks (`got`); [`detach`] puts them back and closes the trace, and the program goes
//! on. The library stays loaded: a thread may still be inside a hook.
//!
//! A library the program opens after attach binds its heap calls to the C library, past the shim:
//! `dlopen` and `dlsym` are redirected too, and the new objects' slots are rewritten at the
//! program's next `dlsym` (see `crate::hooks::dlopen`), the moment it reaches into what it opened.
//!
//! With the CUDA driver loaded, its calls after attach are seen through CUPTI's callbacks (see
//! `crate::cuda::attached`): the runtime fetched the driver's pointers long before, past the shim.
//!
//! PyTorch's allocator, loaded at attach or later, is reached from the inside by a thread of its
//! own (`watch_torch`): a driver allocation, its usual moment, reaches the shim after attach only
//! through CUPTI, which another tool may hold. One loaded after attach, and a CUDA driver loaded
//! after attach, are looked for when a library opened after attach is rebound
//! (`crate::hooks::dlopen`).
//!
//! What is not seen after attach, the trace says (`Record::Attached`): blocks allocated before (their
//! frees are counted apart by the reader), NUMA and affinity calls, and what libraries opened after
//! attach allocate while they load; what of CUDA, `Record::AttachedCuda` says.
//!
//! Never: start twice, or run on a traced call's path (it takes the loader's lock).
pub mod got;

use std::sync::atomic::{AtomicBool, Ordering};

use memshim_trace::{Attached, EndReason, Record};

use crate::channel::{self, send, RUNNING, STATE};
use crate::config::Config;
use crate::record::msg::Msg;
use crate::{session, sys};

/// What [`attach`] and [`detach`] return to the CLI (a C `int`).
pub mod code {
    /// Done.
    pub const OK: i32 = 0;
    /// The process is traced already (preloaded by `memshim run`, or attached now).
    pub const TRACED: i32 = 1;
    /// The trace could not start (the settings turned it off, a secure-execution process, or the
    /// output directory cannot be written by the process).
    pub const NOT_STARTED: i32 = 2;
    /// It was attached before and detached: attaching twice to one process is not supported.
    pub const ATTACHED_BEFORE: i32 = 3;
    /// `detach` found nothing attached.
    pub const NOT_ATTACHED: i32 = 4;
}

static ATTACHED: AtomicBool = AtomicBool::new(false);
static TORCH_WATCHED: AtomicBool = AtomicBool::new(false);
static DETACHED: AtomicBool = AtomicBool::new(false);

/// What attaching does not redirect, for the trace and the report (CUDA's part is
/// `Record::AttachedCuda`'s to say).
const UNSEEN: &str = "blocks allocated before attach, NUMA and affinity calls, and what libraries opened after attach allocate while they load";

/// True while the shim is attached (between a successful [`attach`] and [`detach`]).
pub fn attached() -> bool {
    ATTACHED.load(Ordering::Acquire) && !DETACHED.load(Ordering::Acquire)
}

/// Starts the trace with `settings` (`NAME=value` lines, as the environment would hold them) and
/// redirects `targets` in every loaded object but the shim (which holds the address `own`).
pub fn attach(settings: &str, targets: impl FnOnce() -> Vec<got::Target>, own: usize) -> i32 {
    if DETACHED.load(Ordering::Acquire) {
        return code::ATTACHED_BEFORE;
    }
    if !channel::LATE.load(Ordering::Acquire) || ATTACHED.swap(true, Ordering::AcqRel) {
        return code::TRACED;
    }
    let cfg = Config::from_lookup(|name| lookup(settings, name));
    if !session::start_attached(cfg) {
        return code::TRACED;
    }
    if STATE.load(Ordering::Acquire) != RUNNING {
        return code::NOT_STARTED;
    }
    let age = process_age_ns();
    let done = got::patch(&targets(), own);
    send(Msg::Record(Record::Attached(Box::new(Attached {
        process_age_ns: age,
        slots: done.slots,
        modules: done.modules,
        unseen: UNSEEN.to_string(),
    }))));
    let modules = crate::probes::modules::scan("");
    if modules
        .iter()
        .any(|m| file_name(&m.path).starts_with("libcuda.so"))
    {
        crate::cuda::attached::start(true);
    }
    if modules.iter().any(|m| m.path.ends_with("/libc10_cuda.so")) {
        watch_torch();
    }
    code::OK
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A library opened after attach was rebound: the CUDA driver or PyTorch's CUDA library may have
/// come with it.
pub fn after_rebind() {
    let cuda_to_see = !crate::cuda::attached::started();
    let torch_to_find = !crate::torch::decided();
    if !attached() || !(cuda_to_see || torch_to_find) {
        return;
    }
    let modules = crate::probes::modules::scan("");
    if cuda_to_see
        && modules
            .iter()
            .any(|m| file_name(&m.path).starts_with("libcuda.so"))
    {
        crate::cuda::attached::start(false);
    }
    if torch_to_find && modules.iter().any(|m| m.path.ends_with("/libc10_cuda.so")) {
        watch_torch();
    }
}

/// How often PyTorch's allocator is looked for while attached.
const TORCH_LOOK: std::time::Duration = std::time::Duration::from_millis(100);

/// Attached, a driver allocation, where PyTorch's allocator is usually found (see `crate::torch`),
/// reaches the shim only through CUPTI, which another tool may hold; so the allocator is also looked
/// for by a thread of its own until it is found and decided, or the shim detaches. Not on the thread
/// memshim attach holds, which may be inside that allocator with its lock held; and not on a helper
/// thread, whose allocations come from the shim's own heap: the allocator's copy of the tracker must
/// come from the C library's, which the allocator frees into after detach.
///
/// Started once, and only in a process that has PyTorch's CUDA library loaded.
fn watch_torch() {
    if TORCH_WATCHED.swap(true, Ordering::AcqRel) {
        return;
    }
    // Like the helper threads, it never takes the program's signals.
    let old_mask = sys::block_signals_but_faults();
    let spawned = sys::threads::spawn_inside(c"memshim-torch", || {
        while attached() && !crate::torch::decided() {
            crate::torch::on_driver_alloc();
            std::thread::sleep(TORCH_LOOK);
        }
    });
    sys::restore_signals(&old_mask);
    if let Err(e) = spawned {
        channel::warn(&format!(
            "cannot start the thread that looks for PyTorch's allocator ({e}): its tensors are not seen after attach"
        ));
    }
}

/// Puts the program's slots back and closes the trace.
pub fn detach() -> i32 {
    if !ATTACHED.load(Ordering::Acquire) || DETACHED.swap(true, Ordering::AcqRel) {
        return code::NOT_ATTACHED;
    }
    crate::cuda::attached::stop();
    got::restore();
    session::finish(EndReason::Detached);
    code::OK
}

/// The value of `name` in `NAME=value` lines.
fn lookup(settings: &str, name: &str) -> Option<String> {
    settings.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// How long this process has run: now on the boot clock, less its start time in `/proc/self/stat`
/// (field 22, in clock ticks since boot; the fields are counted after the command's closing paren,
/// which may itself hold spaces).
fn process_age_ns() -> u64 {
    let Some(stat) = sys::read_proc("/proc/self/stat") else {
        return 0;
    };
    let text = String::from_utf8_lossy(&stat);
    let Some(after) = text.rfind(')').map(|i| &text[i + 1..]) else {
        return 0;
    };
    // Field 3 (the state) is the first after the paren, so field 22 is the 20th.
    let Some(ticks) = after
        .split_whitespace()
        .nth(19)
        .and_then(|f| f.parse::<u64>().ok())
    else {
        return 0;
    };
    let hz = sys::clock_ticks_per_second().max(1);
    let started_ns = ticks.saturating_mul(1_000_000_000) / hz;
    sys::clock_ns(libc::CLOCK_BOOTTIME).saturating_sub(started_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_looked_up_by_their_whole_name() {
        let s = "MEMSHIM_OUTPUT=/tmp/a=b\nMEMSHIM_QUIET=1\n";
        assert_eq!(lookup(s, "MEMSHIM_OUTPUT").as_deref(), Some("/tmp/a=b"));
        assert_eq!(lookup(s, "MEMSHIM_QUIET").as_deref(), Some("1"));
        assert_eq!(lookup(s, "MEMSHIM_QUIE"), None);
    }

    #[test]
    fn this_process_has_run_for_a_while_but_not_longer_than_the_machine() {
        let age = process_age_ns();
        assert!(age > 0, "{age}");
        let up: f64 = std::fs::read_to_string("/proc/uptime")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((age as f64) < (up + 1.0) * 1e9, "{age} vs uptime {up}");
    }
}
