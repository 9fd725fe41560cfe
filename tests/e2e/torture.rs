//! The torture suite: one hostile behaviour per small program in `examples/torture/`, each run bare
//! and under the shim (`memshim run` and a bare `LD_PRELOAD`), with a deadline so that a hang fails
//! quickly. Output, exit status and the exact leaks the program's header comment promises must match.
//!
//! None is ignored: a behaviour the shim does not survive is a failing test, not a skipped one.

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
