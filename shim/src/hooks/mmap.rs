//! Anonymous mappings: `mmap`, `mmap64`, `munmap`, `mremap`. File mappings are not memory the
//! program allocated and are not recorded; every `munmap` is (the CLI ignores ranges it never saw).
use std::ffi::{c_int, c_void};

use memshim_trace::MapFn;

use crate::{record::recorder, sys::real};

fn record_map(func: MapFn, p: *mut c_void, len: usize, prot: c_int, flags: c_int) {
    if p != libc::MAP_FAILED && flags & libc::MAP_ANONYMOUS != 0 {
        recorder::on_map(func, p, len, prot, flags);
    }
}

/// `mmap`.
#[no_mangle]
pub extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    let p = real::mmap(addr, len, prot, flags, fd, off);
    record_map(MapFn::Mmap, p, len, prot, flags);
    p
}

/// `mmap64`: the same function as `mmap` on 64-bit glibc.
#[no_mangle]
pub extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    mmap(addr, len, prot, flags, fd, off)
}

/// `munmap`: recorded before the real call, so the range cannot be reused before the record.
#[no_mangle]
pub extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    recorder::on_unmap(addr, len);
    real::munmap(addr, len)
}

/// `mremap`. C declares it variadic; on x86-64 and aarch64 the optional fifth argument arrives in the
/// fifth integer register either way, and the real mremap reads it only with `MREMAP_FIXED`.
#[no_mangle]
pub extern "C" fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    let p = real::mremap(old, old_len, new_len, flags, new_addr);
    if p != libc::MAP_FAILED {
        recorder::on_unmap(old, old_len);
        // The CLI keeps the new range only if the old one was an anonymous range it tracked.
        recorder::on_map(MapFn::Mremap, p, new_len, 0, libc::MAP_ANONYMOUS);
    }
    p
}
