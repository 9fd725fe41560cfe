//! End-to-end tests: compile the examples in `examples/c/`, run them under `memshim run`, and check
//! `memshim report --format json` against the numbers each example's header comment promises.
//!
//! Needs the release artifacts: `cargo build --release --workspace`, then
//! `cargo test --release -p memshim-e2e`. Every test works in its own directory under
//! `$TMPDIR/memshim-e2e/<test name>`, so they run in parallel.

mod bounds;
mod cuda;
mod cuda_timing;
mod cupti;
mod formats;
mod heap;
mod hostile;
mod memory_system;
mod numa;
mod numa_qemu;
mod process;
mod python;
mod regression;
mod report;
mod robustness;
mod run_faults;
mod schema;
mod symbol_cache;
mod torch;
mod torture;
mod util;
