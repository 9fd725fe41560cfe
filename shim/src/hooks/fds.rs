//! Descriptor releases: `close`, `dup2`, `dup3`, `close_range` and `closefrom` tell `owned_fds`
//! which descriptors the program takes back, then make the real call unchanged.
use std::ffi::{c_int, c_uint};

use crate::{sys::owned_fds, sys::real};

/// `close`.
#[no_mangle]
pub extern "C" fn close(fd: c_int) -> c_int {
    owned_fds::released(fd, fd);
    real::close(fd)
}

/// `dup2`: replacing `new` closes it.
#[no_mangle]
pub extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    if old != new {
        owned_fds::released(new, new);
    }
    real::dup2(old, new)
}

/// `dup3`.
#[no_mangle]
pub extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if old != new {
        owned_fds::released(new, new);
    }
    real::dup3(old, new, flags)
}

/// `close_range` (glibc 2.34).
#[no_mangle]
pub extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    // CLOSE_RANGE_UNSHARE alone still closes; CLOSE_RANGE_CLOEXEC only marks them.
    if flags as c_uint & libc::CLOSE_RANGE_CLOEXEC == 0 {
        owned_fds::released(
            first.min(i32::MAX as c_uint) as c_int,
            last.min(i32::MAX as c_uint) as c_int,
        );
    }
    real::close_range(first, last, flags)
}

/// `closefrom` (glibc 2.34).
#[no_mangle]
pub extern "C" fn closefrom(low: c_int) {
    owned_fds::released(low, c_int::MAX);
    real::closefrom(low)
}
