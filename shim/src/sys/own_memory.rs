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
    let len = buf.len();
    readv(
        task,
        &[iovec(buf.as_mut_ptr(), len)],
        &[iovec(addr as *mut u8, len)],
    ) == len as isize
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
    let mut local = [iovec(std::ptr::null_mut(), 0); MANY_READS];
    let mut remote = local;
    for i in 0..n {
        local[i] = iovec(bufs[i].as_mut_ptr(), N);
        remote[i] = iovec(addrs[i] as *mut u8, N);
    }
    readv(task, &local[..n], &remote[..n]).max(0) as usize / N
}

/// The most buffers [`read_own_memory_many`] fills in one call.
pub const MANY_READS: usize = 32;

fn iovec(base: *mut u8, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: base.cast(),
        iov_len: len,
    }
}

/// Bytes read into the `local` buffers (each writable, of its length, borrowed by the caller for
/// the call) from the `remote` addresses; -1 when none could be read, or when there are none.
fn readv(task: u32, local: &[libc::iovec], remote: &[libc::iovec]) -> isize {
    if local.is_empty() {
        return -1;
    }
    // SAFETY: every local vector is a writable buffer of its length that the caller borrows
    // mutably for this call; the kernel checks the remote ones and fails with EFAULT (or stops at
    // the first it cannot read) instead of faulting.
    unsafe {
        libc::process_vm_readv(
            task as libc::pid_t,
            local.as_ptr(),
            local.len() as libc::c_ulong,
            remote.as_ptr(),
            remote.len() as libc::c_ulong,
            0,
        )
    }
}
