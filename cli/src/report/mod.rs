//! The one report model every renderer draws from; its JSON form is the `memshim.report/1` contract
//! (see `docs/report-schema.md`). Fields are only ever added.
pub mod build;
pub mod by_design;
pub mod counted;
pub mod counters;
pub mod device;
pub mod diff;
pub mod filter;
pub mod first_touch;
pub mod fragmentation;
pub mod frame_marks;
pub mod gpus;
pub mod growth;
pub mod model;
pub mod numa_threads;
pub mod owner;
pub mod ranks;
pub mod redact;
pub mod released;
pub mod sites;
pub mod suppressions;
pub mod system;
pub mod torch;
pub mod torch_roles;
pub mod torch_steps;
pub mod transfers;
pub mod unified;
