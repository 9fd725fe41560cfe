//! A cache prefetch hint, for the writer's tables (see `writer::batch`).
//!
//! # Safety
//! `_mm_prefetch` is only a hint: it reads nothing into the program and cannot fault, whatever the
//! address; it is given a valid reference anyway. SSE is part of every x86_64 target.
#![allow(unsafe_code)]

/// Asks the CPU to bring `entry`'s cache line in, ahead of its use.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn prefetch<T>(entry: &T) {
    // SAFETY: see the module note: a hint on a valid reference, with SSE always present.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (entry as *const T).cast(),
        )
    }
}

/// Elsewhere, nothing.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn prefetch<T>(_: &T) {}
