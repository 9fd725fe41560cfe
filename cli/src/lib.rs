//! The memshim CLI as a library: the `memshim` binary's subcommands, and the entry points that the
//! fuzz targets and the corpus replay test drive (see [`fuzz_entry`]). Interprets traces; never
//! records (that is the shim's job) and never changes a trace except to append symbols to one
//! `memshim run` just finished.
pub mod analysis;
pub mod append_symbols;
pub mod args;
pub mod attach;
pub mod bench;
pub mod bundled_shim;
pub mod byte_size;
pub mod cmd;
pub mod elf_kind;
pub mod export;
pub mod file_holes;
pub mod find_trace;
pub mod fuzz_entry;
pub mod gate;
pub mod launcher;
pub mod live_writer;
pub mod progress;
pub mod render;
pub mod replay;
pub mod report;
pub mod settings;
pub mod signals;
pub mod symbol_cache;
pub mod symbolize;
pub mod top;
pub mod traces;
pub mod units;
pub mod user_files;
