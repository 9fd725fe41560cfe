//! Reads of this process's own memory through the kernel (`process_vm_readv`), for memory that may
//! change or go away while it is read (another thread's Python frames, a buffer the program passed):
//! an unmapped address is an error, never a fault. Never: write, or read another process.
//!
//! # Safety
//! Every block hands the kernel local buffers it borrows mutably for the call, with their true
//! lengths; the remote addresses are checked by the kernel, not dereferenced here.
#![allow(unsafe_code)]

/// Fills `buf` from this process's memory at `addr` through `process_vm_readv`, which fails with
/// `EFAULT` on an unmapped address instead of faulting; false unless every byte could be read.
/// `task` is the calling thread's kernel id (`guard::tid`, cached) or the process id: the kernel
/// reads the memory of the process the task belongs to, and a cached id spares a `getpid` system
/// call a read, which was half the system calls of a lent Python walk.
pub fn read_own_memory(task: u32, addr: usize, buf: &mut [u8]) -> bool {
    if addr < 4096 {
        return false;
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` is a writable buffer of the length given; the kernel checks `remote` and
    // fails with EFAULT instead of faulting when it is not mapped.
    let n = unsafe { libc::process_vm_readv(task as libc::pid_t, &local, 1, &remote, 1, 0) };
    n == buf.len() as isize
}

/// Fills each of `bufs` from the address beside it in `addrs`, in one `process_vm_readv` (as
/// [`read_own_memory`]); returns how many, from the first, were read whole. The kernel never splits
/// one buffer and stops at the first address it cannot read, so those after an unreadable one are
/// not read either: the caller asks again from the one after it. At most [`MANY_READS`] at once.
pub fn read_own_memory_many<const N: usize>(
    task: u32,
    addrs: &[usize],
    bufs: &mut [[u8; N]],
) -> usize {
    let n = addrs.len().min(bufs.len()).min(MANY_READS);
    let n = addrs[..n].iter().position(|&a| a < 4096).unwrap_or(n);
    if n == 0 {
        return 0;
    }
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut local = [empty; MANY_READS];
    let mut remote = [empty; MANY_READS];
    for i in 0..n {
        local[i] = libc::iovec {
            iov_base: bufs[i].as_mut_ptr().cast(),
            iov_len: N,
        };
        remote[i] = libc::iovec {
            iov_base: addrs[i] as *mut libc::c_void,
            iov_len: N,
        };
    }
    // SAFETY: the first `n` local vectors are writable buffers of `N` bytes each, borrowed for the
    // call; the kernel checks the remote ones and stops at one it cannot read instead of faulting.
    let got = unsafe {
        libc::process_vm_readv(
            task as libc::pid_t,
            local.as_ptr(),
            n as libc::c_ulong,
            remote.as_ptr(),
            n as libc::c_ulong,
            0,
        )
    };
    if got <= 0 {
        0
    } else {
        got as usize / N
    }
}

/// The most buffers [`read_own_memory_many`] fills in one call.
pub const MANY_READS: usize = 32;
