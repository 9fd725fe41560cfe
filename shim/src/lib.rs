//! `libmemshim.so`: loaded with `LD_PRELOAD` into an unmodified process, it records every host heap
//! allocation and free and every anonymous mapping with its native stack, and streams them to one trace
//! file per process (see the `memshim-trace` crate for the format). The `memshim` CLI turns traces into
//! reports; this library never analyses or symbolizes on the hot path.
//!
//! It must never harm the host: no panic, abort, deadlock or changed behaviour may come from it.
//!
//! - **Panic policy.** The crate builds with `panic = "unwind"` so that every recording step can run
//!   under `catch_unwind` (in `recorder`); a caught panic stops tracing and the real call goes on.
//!   Nothing can unwind into C: hooks are thin wrappers around the real call and the recorder.
//! - **Reentrancy.** A const-initialised thread-local guard (`guard`) makes every allocation the shim
//!   causes pass straight through; the writer and sampler threads are never traced. The shim's own
//!   Rust allocations, and the C allocations made inside the shim, come from memory it maps itself
//!   (`sys::own_heap`, through `global_alloc` and the heap hooks): no allocator arena is made for
//!   its threads, and running out of memory ends the trace, never the program.
//! - **Bootstrap.** The real functions are found with `dlsym(RTLD_NEXT)`; what dlsym allocates
//!   meanwhile comes from a static arena (`bootstrap`).
//! - **Order.** Frees and unmaps are recorded before the real call, allocations after it, all through
//!   one FIFO channel, so a reused address is never paired with the wrong block.
//! - **fork/exec/exit.** A fork child writes its own trace with its own writer (started on its first
//!   event); exec closes the trace first; the library destructor and `_exit` close it at the end; a
//!   frame reaches the disk as soon as the queue goes quiet and at least every 100 ms, so SIGKILL
//!   loses at most what had not reached the writer (in the thin mode, while the helpers are parked,
//!   what came since the last send that drained: see `on_demand`); a failed exec goes on in the
//!   same trace.
//!
//! The modules, in the order a recorded call travels:
//! - `hooks` (and the CUDA wrappers in `cuda`, the PyTorch callbacks in `torch`): the exported
//!   symbols; they call the real function and hand the call to `record`.
//! - `record`: on the traced thread, the guard, the stack (with `python`'s frames), the sampling
//!   decision; it makes a message.
//! - `channel`: the one queue every producer sends on, and the state they ask before recording.
//! - `writer`: its own thread (or, parked, the program's: see `on_demand`); turns messages into the
//!   trace file (`writer::output`).
//! - `probes`: its own thread; reads what no call reports (heap statistics, counters, GPUs, the
//!   module map) and sends it on the same channel.
//! - `sys`: below everything: the real functions, system-call wrappers, the clock, the helper
//!   threads, the bootstrap arena.
//! - `session`: the lifecycle above them all: starts the writer and the probes (through
//!   `on_demand`, which in the thin mode keeps them parked while the process has one thread),
//!   follows fork and exec, ends the trace; `config` and `rank` are the settings it reads once.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
// Unit-test builds leave out the hooks (a test binary must keep its own allocator), so much of the
// recording path is unused there.
#![cfg_attr(test, allow(dead_code))]

mod alt_stack;
#[cfg_attr(test, allow(dead_code))]
mod attach;
mod channel;
mod config;
mod crash;
mod cuda;
#[cfg(not(test))]
mod hooks;
mod on_demand;
mod probes;
mod python;
mod rank;
mod record;
mod session;
mod sys;
mod torch;
mod writer;

#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: sys::global_alloc::ShimAllocator = sys::global_alloc::ShimAllocator;

#[cfg(not(test))]
mod lifecycle {
    //! The library constructor and destructor.
    //!
    //! # Safety
    //! Two function pointers placed in `.init_array` and `.fini_array`, which the loader calls once
    //! each with no arguments; both catch every panic.
    #![allow(unsafe_code)]

    use crate::{record::recorder, session};
    use memshim_trace::EndReason;

    extern "C" fn init() {
        recorder::lifecycle(session::constructed);
    }

    extern "C" fn fini() {
        recorder::lifecycle(|| session::finish(EndReason::Exit));
    }

    // SAFETY: a function pointer in .init_array is called once by the loader when the library is
    // initialised; `init` takes no arguments it needs and catches every panic.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static INIT: extern "C" fn() = init;

    // SAFETY: as above, called once from the loader's destructor pass at exit.
    #[used]
    #[unsafe(link_section = ".fini_array")]
    static FINI: extern "C" fn() = fini;
}
