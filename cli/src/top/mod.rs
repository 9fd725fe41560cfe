//! `memshim top`: a live view of a process being traced, drawn from its trace as the shim writes it
//! (the shim flushes a frame at least every 100 ms, and a trace without its end is read as far as
//! its last whole frame), so watching costs the program nothing.
//!
//! `crate::find_trace` says which trace, `live` works out the figures, `screen` draws them,
//! `terminal` owns the terminal and the refresh. Never writes to a trace or touches the traced
//! process.
pub mod live;
pub mod screen;
pub mod terminal;
