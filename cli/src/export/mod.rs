//! Formats other tools open: one file per format.
pub mod collapsed;
pub mod flamegraph;
pub mod perfetto;
pub mod pprof;
mod protobuf;
pub mod speedscope;
