//! The exported C symbols that interpose on the host's calls.
//!
//! # Safety
//! Each hook has exactly the C signature of the function it replaces, forwards its arguments
//! unchanged to the real function (see `real`), and returns the real result unchanged. Recording
//! happens through `recorder`, which never unwinds. The hooks are only compiled into the cdylib, not
//! into unit-test binaries (which must keep their own allocator).
#![allow(unsafe_code)]

mod api;
pub(crate) mod attach;
mod clone;
pub(crate) mod dlopen;
mod exec_list;
mod fds;
mod heap;
mod limits;
mod mmap;
mod numa;
pub(crate) mod process;
mod signals;
