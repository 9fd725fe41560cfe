//! End-to-end tests: compile the examples in `examples/c/`, run them under `memshim run`, and check
//! `memshim report --format json` against the numbers each example's header comment promises.
//!
//! Needs the release artifacts: `cargo build --release --workspace`, then
//! `cargo test --release -p memshim-e2e`. Every test works in its own directory under
//! `$TMPDIR/memshim-e2e/<test name>`, so they run in parallel.

mod attach;
mod attach_cuda;
mod attach_cupti;
mod attach_dlopen;
mod bounds;
mod cdp;
mod cli_docs;
mod cuda;
mod cuda_hints;
mod cuda_timing;
mod cupti;
mod exports;
mod first_screen;
mod flamegraph;
mod formats;
mod frames;
mod gate;
mod heap;
mod hostile;
mod install;
mod memory_system;
mod numa;
mod numa_qemu;
mod owners;
mod page;

mod process;
mod pytest_plugin;
mod python;
mod python_calls;
mod regression;
mod released;
mod report;
mod robustness;
mod run_faults;
mod schema;
mod snapshot;
mod symbol_cache;
mod top;
mod torch;
mod torch_steps;
mod torture;
mod util;

mod signal_defaults {
    //! A test runner started from a shell without job control (`cmd &`, `nohup`, some CI agents)
    //! inherits SIGINT, SIGQUIT and SIGHUP ignored, and every program a test starts would inherit
    //! that too: the programs that report their signal dispositions, and the tests that signal
    //! `memshim run`, would then measure the runner's environment instead of the shim. The test
    //! binary puts the default actions back once, when it is loaded, before any test thread runs.
    //!
    //! # Safety
    //! `signal` with `SIG_DFL` is async-signal-safe and has no precondition; it runs from the
    //! binary's initialiser array, on the one thread there is.
    #![allow(unsafe_code)]

    extern "C" fn reset() {
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
            // SAFETY: see the module note.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }

    // SAFETY: the loader calls each function of .init_array once, with no arguments, before main.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static RESET: extern "C" fn() = reset;
}
