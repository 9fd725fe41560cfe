//! The torture suite: one hostile behaviour per small program in `examples/torture/`, each run bare
//! and under the shim (`memshim run` and a bare `LD_PRELOAD`), with a deadline so that a hang fails
//! quickly. Output, exit status and the exact leaks the program's header comment promises must match.
//!
//! Tests for behaviours the shim does not survive yet are marked `#[ignore = "issue 16: ..."]`; run
//! them with `cargo test --release -p memshim-e2e -- torture --ignored`.

mod build;
mod deadline;
mod harness;

mod allocators;
mod descriptors;
mod exec;
mod exits;
mod leaks;
mod libraries;
mod limits;
mod run_signals;
mod runtimes;
mod signals;
mod spawn;
mod threads;
mod workdir;
