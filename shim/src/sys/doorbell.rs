//! The writer's doorbell: its nap between polls is a wait on a futex word, and whoever hands it
//! something that must not wait for the next poll (the trace's end at exit, at a fatal signal or
//! before an exec; a flush asked for through the C API) rings it.
//!
//! Why: the writer naps up to 5 ms while the program is quiet, and the exiting thread waits for it
//! to put the end on disk. Those milliseconds were added to every process's exit, with its other
//! threads still running after the program had torn itself down. CPython up to 3.12 has daemon
//! threads that read the freed interpreter when they wake in that window (gh-110052): the longer the
//! window, the more often a traced Python crashed at exit where the bare one did not.
//!
//! Never: allocate, take a lock or call libc (it is rung from signal handlers and from `_exit`'s
//! neighbourhood): one atomic word and raw `futex` system calls.
//!
//! # Safety
//! The futex calls pass the address of a static `AtomicU32`, valid for the whole process, and a
//! timeout that lives on the caller's stack for the duration of the call.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Bumped at every ring; the writer naps only while it still holds the value it last saw.
static BELL: AtomicU32 = AtomicU32::new(0);

/// What the writer saw before deciding to nap: a ring after this read cuts the nap short.
pub fn seen() -> u32 {
    BELL.load(Ordering::Acquire)
}

/// Wakes the writer now if it is napping, or makes its next nap return at once.
pub fn ring() {
    BELL.fetch_add(1, Ordering::AcqRel);
    // SAFETY: FUTEX_WAKE on a static word; no other argument is read.
    unsafe {
        super::raw_syscall(
            libc::SYS_futex,
            [
                BELL.as_ptr() as usize,
                (libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG) as usize,
                1,
                0,
                0,
                0,
            ],
        )
    };
}

/// Naps for `d` at most; returns early when the bell rang since `seen` was read.
pub fn nap(seen: u32, d: Duration) {
    if BELL.load(Ordering::Acquire) != seen {
        return;
    }
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a static word with a relative timeout on this stack; the kernel returns
    // at once when the word no longer holds `seen`, so a ring between the check and the call is
    // never missed. An interrupted or spurious return only makes the nap shorter.
    unsafe {
        super::raw_syscall(
            libc::SYS_futex,
            [
                BELL.as_ptr() as usize,
                (libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG) as usize,
                seen as usize,
                &ts as *const libc::timespec as usize,
                0,
                0,
            ],
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_ring_cuts_the_nap_short_and_a_quiet_bell_lets_it_run() {
        let t = Instant::now();
        nap(seen(), Duration::from_millis(20));
        assert!(
            t.elapsed() >= Duration::from_millis(19),
            "{:?}",
            t.elapsed()
        );

        let before = seen();
        ring();
        let t = Instant::now();
        nap(before, Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());

        let before = seen();
        let ringer = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            ring();
        });
        let t = Instant::now();
        nap(before, Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        ringer.join().unwrap();
    }
}
