//! CUDA in a process the shim was attached to (`memshim attach`) with the CUDA driver loaded. The
//! CUDA runtime fetched the driver's entry points long before, past the shim, so no wrapper ever
//! sees its calls; CUPTI's driver-API callbacks do (`subscriber`, `calls`), on the calling thread,
//! with its stack. What was in use before is read once as the starting point (`baseline`), and a
//! [`memshim_trace::AttachedCuda`] record says both: what is seen (or precisely why not) and how
//! much device memory was in use at attach.
//!
//! All of it runs on a thread of its own, started at attach: not on the thread the attach holds,
//! which may have stopped inside the driver with one of its locks held; and not on a helper thread
//! of the shim's, whose allocations come from the shim's own heap while CUPTI's must stay the C
//! library's (CUPTI frees them after detach). The attach waits for it a moment
//! ([`READY_WAIT`]), so the program's calls right after attach are seen. A driver loaded after
//! attach is handled the same way, from the program's next `dlsym` (see `crate::attach`).
//!
//! Never: subscribe twice, or leave the subscription behind at detach.
pub mod baseline;
pub mod calls;
pub mod subscriber;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memshim_trace::{AttachedCuda, Record};

use crate::record::msg::Msg;
use crate::{channel, sys};

static STARTED: AtomicBool = AtomicBool::new(false);
static READY: AtomicBool = AtomicBool::new(false);

/// How long the attach waits for the subscription before it lets the program go on.
pub const READY_WAIT: Duration = Duration::from_secs(2);

/// True once [`start`] ran.
pub fn started() -> bool {
    STARTED.load(Ordering::Acquire)
}

/// Starts seeing the driver's calls (see the module note); with `wait`, waits a moment for it (at
/// attach: not when the driver comes later, on the program's thread that loaded it).
pub fn start(wait: bool) {
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(cfg) = channel::config() else {
        return;
    };
    let lib = cfg.cupti_lib.clone();
    let cuda_on = cfg.cuda;
    // Like the helper threads, it never takes the program's signals.
    let old_mask = sys::block_signals_but_faults();
    let spawned = sys::threads::spawn_inside(c"memshim-cupti", move || {
        // With CUDA recording off the driver is not touched at all.
        let (devices, seen) = if cuda_on {
            (
                baseline::read(sys::getpid()),
                subscriber::subscribe(lib.as_deref()),
            )
        } else {
            (
                Vec::new(),
                Err("MEMSHIM_CUDA=0 turned CUDA recording off".to_string()),
            )
        };
        // Said in the trace (and the report), not in the program's stderr: the program's output
        // is its own, and seeing less is not a failure of the trace.
        let (seen, detail) = match seen {
            Ok(what) => (true, what),
            Err(why) => (false, why),
        };
        channel::send(Msg::Record(Record::AttachedCuda(Box::new(AttachedCuda {
            seen,
            detail,
            devices,
        }))));
        READY.store(true, Ordering::Release);
    });
    sys::restore_signals(&old_mask);
    if let Err(e) = spawned {
        channel::warn(&format!(
            "cannot start the thread that subscribes to CUPTI ({e}): the CUDA driver's calls after attach are not seen"
        ));
        return;
    }
    if !wait {
        return;
    }
    let until = Instant::now() + READY_WAIT;
    while !READY.load(Ordering::Acquire) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Stops the callbacks (at detach, before the trace closes).
pub fn stop() {
    subscriber::unsubscribe();
}
