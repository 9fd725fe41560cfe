//! Cheap timestamps: `clock_gettime` goes through the vDSO and costs tens of nanoseconds.

use crate::sys::clock_ns as read;

/// `CLOCK_MONOTONIC` in nanoseconds: the clock of every event.
#[inline]
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Wall-clock time in nanoseconds since the Unix epoch, for the header.
pub fn realtime_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}
