//! A `/proc` file the sampler reads again and again (`/proc/self/statm`, `/proc/self/stat`), kept
//! open high in the descriptor table and read from its start with `pread`, so each reading opens
//! nothing: a program that closes every descriptor and opens its own files could otherwise find a
//! number taken for a moment by the sampler. If the program closes it (see `owned_fds`), it is
//! opened again once and kept again. Under a tight `RLIMIT_NOFILE` nothing is read.
//!
//! Never: used from a program thread (only the sampler reads these files).
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::sys;
use crate::sys::owned_fds::{self, Owner};

/// Below this soft `RLIMIT_NOFILE` no `/proc` file is read (the trace's own threshold too).
const MIN_NOFILE: u64 = 64;

/// One kept-open `/proc` file.
pub struct ProcFile {
    path: &'static CStr,
    fd: Option<OwnedFd>,
    /// The process that opened it: `/proc/self` names the opener for as long as the descriptor
    /// lives, so a fork child must open its own.
    pid: u32,
}

impl ProcFile {
    /// A file to read at `path`; opened at the first reading.
    pub const fn new(path: &'static CStr) -> ProcFile {
        ProcFile {
            path,
            fd: None,
            pid: 0,
        }
    }

    /// The whole file as it reads now (at most `N` bytes), or `None` when it cannot be read.
    pub fn read<const N: usize>(&mut self, buf: &mut [u8; N]) -> Option<usize> {
        if sys::nofile_limit().is_some_and(|n| n < MIN_NOFILE) {
            // Under a limit this tight every descriptor is one the program may need, and one kept
            // (or even opened for a moment) would take it: the readings are done without.
            return None;
        }
        let pid = sys::getpid();
        if self.pid != pid {
            // Inherited from the parent: this process's own copy of the descriptor, to close.
            if let Some(fd) = self.fd.take() {
                if owned_fds::holds(fd.as_raw_fd(), Owner::Probe) {
                    owned_fds::disown(fd.as_raw_fd(), Owner::Probe);
                } else {
                    std::mem::forget(fd);
                }
            }
            self.pid = pid;
        }
        if let Some(fd) = &self.fd {
            if !owned_fds::holds(fd.as_raw_fd(), Owner::Probe) {
                // The program took the number back: it is not ours to close.
                if let Some(fd) = self.fd.take() {
                    std::mem::forget(fd);
                }
            }
        }
        if self.fd.is_none() {
            let path = self.path;
            let fd = owned_fds::probe(|| sys::open_read_only(path).map(sys::move_high))??;
            if !owned_fds::claim(fd.as_raw_fd(), Owner::Probe) {
                return sys::pread(fd.as_raw_fd(), buf, 0);
            }
            self.fd = Some(fd);
        }
        let fd = self.fd.as_ref()?.as_raw_fd();
        // Marked in use across the read, so the number stays this file's (see `owned_fds`).
        let _using = owned_fds::in_use(fd, Owner::Probe)?;
        sys::pread(fd, buf, 0)
    }
}
