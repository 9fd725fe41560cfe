//! Writing a file where `write` may not: through a shared mapping of space the file already has.
//!
//! A program may limit the size of the files it writes (`RLIMIT_FSIZE`). The kernel checks that
//! limit against the position of every `write` and every growth of a file, with the process's one
//! limit for all its threads: once it is in force, the trace cannot pass it by writing. It does not
//! check stores into a shared mapping of a file, nor shrinking a file. So the trace is given its
//! room while it still may grow (the file's length set far ahead, no disk used), and frames are
//! then stored into that room through a mapping; at the end the file is cut back to what it holds.
//!
//! Never: store into a page the file system has not allocated. A store into a hole of a sparse file
//! that the disk cannot take raises SIGBUS in the writing thread, which would end the program; so
//! every range is allocated (`fallocate`, which within the file's length is not limited either)
//! before it is mapped, and a file system that cannot allocate ahead gets no room at all.
//!
//! # Safety
//! The mappings are made with the raw system calls (the shim hooks `mmap`), cover only the range
//! stored into, are unmapped before returning, and the bytes copied come from a slice the caller
//! owns; every other call takes plain integers.
#![allow(unsafe_code)]

use std::io;

use super::raw_syscall;

/// Sets the length of the file behind `fd` to `len` (larger or smaller).
pub fn set_len(fd: libc::c_int, len: u64) -> io::Result<()> {
    // SAFETY: ftruncate takes a descriptor and a length; an error leaves the file as it was.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Allocates disk for `len` bytes at `at`, leaving the file's length alone.
pub fn allocate(fd: libc::c_int, at: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate takes a descriptor and integers; KEEP_SIZE leaves the length alone.
    let r = unsafe {
        libc::fallocate(
            fd,
            libc::FALLOC_FL_KEEP_SIZE,
            at as libc::off_t,
            len as libc::off_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Gives the disk behind `len` bytes at `at` back, so they read as zeros (the length stays).
pub fn clear(fd: libc::c_int, at: u64, len: u64) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: as in `allocate`; PUNCH_HOLE must come with KEEP_SIZE.
    let r = unsafe {
        libc::fallocate(
            fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            at as libc::off_t,
            len as libc::off_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Stores `buf` at offset `at` of the file behind `fd` (opened for reading and writing) through a
/// shared mapping. The range must lie within the file's length; it is allocated first, so a full
/// disk is an error here (`ENOSPC`), never a signal.
pub fn store(fd: libc::c_int, at: u64, buf: &[u8]) -> io::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    allocate(fd, at, buf.len() as u64)?;
    let page = super::page_size();
    let base = at - at % page;
    let skip = (at - base) as usize;
    let span = skip + buf.len();
    // SAFETY: a new shared mapping of `span` bytes of the file at a page-aligned offset; the kernel
    // picks the address. Arguments are plain integers.
    let p = unsafe {
        raw_syscall(
            libc::SYS_mmap,
            [
                0,
                span,
                (libc::PROT_READ | libc::PROT_WRITE) as usize,
                libc::MAP_SHARED as usize,
                fd as usize,
                base as usize,
            ],
        )
    };
    if (-4095..0).contains(&p) {
        return Err(io::Error::from_raw_os_error(-p as i32));
    }
    let p = p as *mut u8;
    // SAFETY: the mapping is `span` bytes long and writable, `skip + buf.len() == span`, and `buf`
    // cannot overlap a mapping made just now. Every page of the range is allocated on disk.
    unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), p.add(skip), buf.len()) };
    // SAFETY: unmaps exactly the mapping made above; the stores stay in the file's page cache.
    unsafe { raw_syscall(libc::SYS_munmap, [p as usize, span, 0, 0, 0, 0]) };
    Ok(())
}

/// Bytes the file behind `fd` can still grow by without new disk space being found: what is
/// allocated past its first `len` bytes (the reserve kept beyond its end) plus what its file
/// system has free for it. `None` when either cannot be read.
pub fn space_left(fd: libc::c_int, len: u64) -> Option<u64> {
    // SAFETY: both structures are plain data that the calls fill; zeroed is a valid start.
    let (mut st, mut vfs): (libc::stat, libc::statvfs) = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is a descriptor; `st` and `vfs` are writable structures of the right type.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || unsafe { libc::fstatvfs(fd, &mut vfs) } != 0 {
        return None;
    }
    let allocated = (st.st_blocks as u64).saturating_mul(512);
    let free = vfs.f_bavail.saturating_mul(vfs.f_frsize);
    Some(allocated.saturating_sub(len).saturating_add(free))
}
