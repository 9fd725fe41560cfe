//! One perf event counter opened with the raw `perf_event_open` system call, for the calling thread
//! and the threads it goes on to create (`inherit`), counting from the moment it is opened.
//!
//! Not through the perf-event crate's `Builder`: it keeps a thread-local whose destructor glibc
//! registers in a block it allocates, on the program's main thread inside the shim's guard, and
//! glibc frees that block at exit: a free of a block never seen allocated, which the thin sampling
//! mode's counts cannot tell from the program's own. Opening the counters from a helper thread
//! aimed at the main thread avoided that but made a guest kernel live-lock (soft lockups in
//! perf_install_in_context, seen in the two-node QEMU test).
//!
//! # Safety
//! The descriptor is owned by an `OwnedFd` from the moment the system call returns it; the
//! attribute block is a zeroed `perf_event_attr` of the kernel's layout with its size set; a read
//! fills exactly the 8 bytes of one `u64`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use perf_event_open_sys::bindings::{perf_event_attr, PERF_FLAG_FD_CLOEXEC};

/// Which event: the kernel's `type` and `config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub type_: u32,
    pub config: u64,
}

/// An open counter.
///
/// Its descriptor sits high in the descriptor table (see `sys::move_high`), and before each read it
/// is checked to be the same perf event file: a program that closed every descriptor and opened its
/// own may hold that number now, and the shim must never read (consume) a file of the program's.
/// A counter found replaced is never closed either: the number is the program's.
#[derive(Debug)]
pub struct Counter {
    fd: std::mem::ManuallyDrop<OwnedFd>,
    id: (u64, u64),
}

impl Counter {
    /// Opens and starts `kind` for the calling thread and its future threads, counting kernel time
    /// too when `kernel` (page faults happen there). The descriptor is close-on-exec.
    pub fn open(kind: Kind, kernel: bool) -> io::Result<Counter> {
        // SAFETY: an all-zero perf_event_attr is valid (every field is an integer or bitfield).
        let mut attr: perf_event_attr = unsafe { std::mem::zeroed() };
        attr.size = std::mem::size_of::<perf_event_attr>() as u32;
        attr.type_ = kind.type_;
        attr.config = kind.config;
        attr.set_inherit(1);
        attr.set_exclude_kernel(u64::from(!kernel));
        attr.set_exclude_hv(1);
        // SAFETY: a valid attribute block; pid 0 and cpu -1 is this thread on any CPU; no group.
        let fd = unsafe {
            perf_event_open_sys::perf_event_open(&mut attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC as _)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the kernel just returned, owned by nothing else.
        let fd = crate::sys::move_high(unsafe { OwnedFd::from_raw_fd(fd) });
        let id = crate::sys::file_id(fd.as_raw_fd())
            .ok_or_else(|| io::Error::other("cannot identify the counter's descriptor"))?;
        if !crate::sys::owned_fds::claim(fd.as_raw_fd(), crate::sys::owned_fds::Owner::Counter) {
            return Err(io::Error::other("too many descriptors kept by the shim"));
        }
        Ok(Counter {
            fd: std::mem::ManuallyDrop::new(fd),
            id,
        })
    }

    /// The descriptor marked in use (see `owned_fds::in_use`) while it is still the counter's.
    fn use_if_ours(&self) -> Option<crate::sys::owned_fds::InUse> {
        let fd = self.fd.as_raw_fd();
        let using = crate::sys::owned_fds::in_use(fd, crate::sys::owned_fds::Owner::Counter)?;
        (crate::sys::file_id(fd) == Some(self.id)).then_some(using)
    }

    /// The total so far (with `inherit`, the opening thread's and its children's as they run).
    pub fn read(&self) -> io::Result<u64> {
        // Held across the read: a read of a number the program took back would move its file's
        // offset.
        let Some(_using) = self.use_if_ours() else {
            return Err(io::Error::other(
                "the program closed the counter's descriptor while it ran",
            ));
        };
        let mut value = 0u64;
        // SAFETY: reads at most 8 bytes into a u64 this function owns.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&mut value as *mut u64).cast::<libc::c_void>(),
                std::mem::size_of::<u64>(),
            )
        };
        match n {
            8 => Ok(value),
            n if n < 0 => Err(io::Error::last_os_error()),
            _ => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a short read")),
        }
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        if let Some(_using) = self.use_if_ours() {
            crate::sys::owned_fds::disown(
                self.fd.as_raw_fd(),
                crate::sys::owned_fds::Owner::Counter,
            );
            // SAFETY: dropped once, here; the descriptor is still the counter's own, and stays so
            // while it is marked in use.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_software_counter_counts_this_threads_page_faults() {
        // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN.
        let kind = Kind {
            type_: 1,
            config: 5,
        };
        let Ok(c) = Counter::open(kind, true).or_else(|_| Counter::open(kind, false)) else {
            // perf_event_paranoid forbids even software counters here: nothing to check.
            return;
        };
        let before = c.read().expect("read");
        let mut v = vec![0u8; 16 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let after = c.read().expect("read");
        assert!(after >= before + 1000, "{before} -> {after}");
    }
}
