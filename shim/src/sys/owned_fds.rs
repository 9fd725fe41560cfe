//! The descriptors that the shim, or a library it loaded, keeps open for the whole run: the perf
//! counters and libunwind's memory-validation pipe. A program may close them (a daemon closes every
//! descriptor) and be given the same numbers for its own files; from then on they are the program's.
//! The `close`/`dup2`/`dup3`/`close_range`/`closefrom` hooks report every descriptor the program
//! releases here, before the real call, so their owners stop using them: the unwinder falls back to
//! libgcc (libunwind would otherwise read a byte from, write a byte to, and finally close a
//! descriptor that is now the program's), and a counter is never read or closed again.
//!
//! A shim thread uses a kept descriptor only inside [`in_use`], and a release waits for uses under
//! way to end before the real call: checking "still ours" and then writing is otherwise a race, in
//! which the program's `dup2` replaces the number between the two and the trace's frames land in
//! the program's file. The release marks the slot free before it looks for uses, and a use marks
//! itself before it looks at the slot (both sequentially consistent), so one of the two always sees
//! the other.
//!
//! Never: allocate or lock; `released` runs on every `close` of the program (reading the clock only
//! when it takes one of the shim's descriptors).
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Who keeps a descriptor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Owner {
    None = 0,
    Unwinder = 1,
    Counter = 2,
    Trace = 3,
    Probe = 4,
}

const SLOTS: usize = 16;
static FDS: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
static OWNERS: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];
/// Set once any descriptor is claimed: until then `released` is one load.
static ANY: AtomicBool = AtomicBool::new(false);
/// The process whose descriptor table the slots describe. A vfork child (Python's `subprocess`,
/// glibc's `posix_spawn`) shares the parent's memory but has its own copy of the table: its
/// `close_range` before `exec` releases nothing of the parent's, and taking it for a release had
/// cost every later stack of a PyTorch process libunwind (`import torch` runs `ldconfig -p`).
static TABLE_PID: AtomicU32 = AtomicU32::new(0);
/// Set once a descriptor of the unwinder's was released.
static UNWINDER_LOST: AtomicBool = AtomicBool::new(false);
/// When the program last released a descriptor the shim kept (monotonic ns, 0: never).
static LAST_RELEASE: AtomicU64 = AtomicU64::new(0);
/// How long after such a release the shim opens nothing (see [`released_lately`]).
const SETTLE_NS: u64 = 250_000_000;
/// Shim threads inside [`probe`] now (each may hold a descriptor opened for a moment).
static IN_PROBE: AtomicU32 = AtomicU32::new(0);
/// The longest a release waits for probes under way to end.
const PROBE_WAIT_NS: u64 = 50_000_000;
/// Shim threads using each slot's descriptor now (see [`in_use`]).
static BUSY: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];
/// The longest a release waits for a use under way: a write of one frame, which only a descheduled
/// writer makes long, and a bound so that a signal handler closing the descriptor its own thread is
/// using (the use cannot end until the handler returns) costs a pause, not a hang.
const USE_WAIT_NS: u64 = 2_000_000_000;

/// Records that `owner` keeps `fd` open; false when no slot is left (the caller then should not
/// keep it).
pub fn claim(fd: i32, owner: Owner) -> bool {
    for (i, slot) in FDS.iter().enumerate() {
        if slot
            .compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            OWNERS[i].store(owner as u8, Ordering::Release);
            TABLE_PID.store(crate::sys::getpid(), Ordering::Release);
            ANY.store(true, Ordering::Release);
            return true;
        }
    }
    false
}

/// The shim is about to close `fd` itself: no longer kept, and no sign of a program opening its own
/// files next (see [`released_lately`]).
pub fn disown(fd: i32, owner: Owner) {
    for (f, o) in FDS.iter().zip(OWNERS.iter()) {
        if f.load(Ordering::Acquire) == fd && o.load(Ordering::Acquire) == owner as u8 {
            f.store(-1, Ordering::Release);
            o.store(Owner::None as u8, Ordering::Release);
        }
    }
}

/// Whether `fd` is still kept by `owner` (not released by the program since it was claimed).
pub fn holds(fd: i32, owner: Owner) -> bool {
    FDS.iter()
        .zip(OWNERS.iter())
        .any(|(f, o)| f.load(Ordering::Acquire) == fd && o.load(Ordering::Acquire) == owner as u8)
}

/// A use of a kept descriptor under way: until it is dropped, a release of the number by the
/// program waits before its real call, so the descriptor stays the one the shim checked.
#[must_use]
pub struct InUse {
    slot: usize,
}

impl Drop for InUse {
    fn drop(&mut self) {
        BUSY[self.slot].fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks `fd` in use by `owner` if it is still kept by it; `None` when the program released it.
/// Hold the guard across the check that the descriptor is the expected file and every call
/// through it.
pub fn in_use(fd: i32, owner: Owner) -> Option<InUse> {
    for i in 0..SLOTS {
        if FDS[i].load(Ordering::SeqCst) != fd || OWNERS[i].load(Ordering::SeqCst) != owner as u8 {
            continue;
        }
        BUSY[i].fetch_add(1, Ordering::SeqCst);
        // Looked at again after the mark: a release that cleared the slot before it saw the mark
        // is seen here.
        if FDS[i].load(Ordering::SeqCst) == fd && OWNERS[i].load(Ordering::SeqCst) == owner as u8 {
            return Some(InUse { slot: i });
        }
        BUSY[i].fetch_sub(1, Ordering::SeqCst);
    }
    None
}

/// Whether the unwinder's descriptors are still its own.
#[inline]
pub fn unwinder_intact() -> bool {
    !UNWINDER_LOST.load(Ordering::Acquire)
}

/// The program is about to close (or replace) every descriptor in `lo..=hi`.
#[inline]
pub fn released(lo: i32, hi: i32) {
    if !ANY.load(Ordering::Acquire) || hi < lo {
        return;
    }
    released_slow(lo, hi);
}

/// True for a moment (250 ms) after the program released a descriptor of the shim's: a program
/// that closes every descriptor opens its own right after and may count on the numbers it gets
/// (a daemon's 0, 1, 2; "the next is 3"), so the shim opens nothing then, not even for a moment (the
/// trace's frames wait in memory, the sampler skips its /proc readings), as any open would take the
/// lowest free number.
pub fn released_lately() -> bool {
    let t = LAST_RELEASE.load(Ordering::Acquire);
    t != 0 && crate::sys::clock::monotonic_ns().saturating_sub(t) < SETTLE_NS
}

/// Runs `f`, which opens descriptors for a moment (a `/proc` reading, the trace reopened), unless
/// the program released one of the shim's lately. A release waits for probes under way to end, so
/// once the program's `close` returns no shim thread holds a low number it could be about to get.
pub fn probe<T>(f: impl FnOnce() -> T) -> Option<T> {
    IN_PROBE.fetch_add(1, Ordering::SeqCst);
    let out = (!released_lately()).then(f);
    IN_PROBE.fetch_sub(1, Ordering::SeqCst);
    out
}

/// Waits (boundedly) until no shim thread is inside [`probe`].
fn wait_for_probes() {
    let deadline = crate::sys::clock::monotonic_ns() + PROBE_WAIT_NS;
    while IN_PROBE.load(Ordering::SeqCst) != 0 && crate::sys::clock::monotonic_ns() < deadline {
        crate::sys::nap_signal_safe(std::time::Duration::from_micros(50));
    }
}

/// Waits (boundedly) until no use of the slots in `slots` (a bit each) is under way.
fn wait_for_uses(slots: u32) {
    let busy = || (0..SLOTS).any(|i| slots & (1 << i) != 0 && BUSY[i].load(Ordering::SeqCst) != 0);
    if !busy() {
        return;
    }
    let deadline = crate::sys::clock::monotonic_ns() + USE_WAIT_NS;
    while busy() && crate::sys::clock::monotonic_ns() < deadline {
        crate::sys::nap_signal_safe(std::time::Duration::from_micros(20));
    }
}

/// In a fork child: the slots describe its copy of the parent's table (a vfork child runs no fork
/// handler, and keeps the parent's number).
pub fn after_fork_in_child() {
    TABLE_PID.store(crate::sys::getpid(), Ordering::Release);
}

#[cold]
fn released_slow(lo: i32, hi: i32) {
    let kept = |fd: i32| fd >= 0 && fd >= lo && fd <= hi;
    if !FDS.iter().any(|f| kept(f.load(Ordering::SeqCst))) {
        return;
    }
    // Asked only when the range holds one of the shim's descriptors: `close` stays free of
    // system calls of the shim's.
    if TABLE_PID.load(Ordering::Acquire) != crate::sys::getpid() {
        return;
    }
    let mut hit = 0u32;
    for (i, (f, o)) in FDS.iter().zip(OWNERS.iter()).enumerate() {
        let fd = f.load(Ordering::SeqCst);
        if kept(fd) {
            if hit == 0 {
                LAST_RELEASE.store(crate::sys::clock::monotonic_ns().max(1), Ordering::SeqCst);
            }
            hit |= 1 << i;
            if o.load(Ordering::Acquire) == Owner::Unwinder as u8 {
                UNWINDER_LOST.store(true, Ordering::Release);
            }
            f.store(-1, Ordering::SeqCst);
            o.store(Owner::None as u8, Ordering::SeqCst);
        }
    }
    if hit != 0 {
        wait_for_uses(hit);
        wait_for_probes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_descriptor_is_no_longer_held() {
        // Numbers far above any real descriptor: other tests of this process hold real ones, which
        // a wider release would take from them.
        assert!(claim(100_900, Owner::Counter));
        assert!(claim(100_901, Owner::Unwinder));
        assert!(holds(100_900, Owner::Counter) && !holds(100_900, Owner::Unwinder));
        released(100_003, 100_899);
        assert!(holds(100_900, Owner::Counter) && unwinder_intact());
        released(100_901, 100_901);
        assert!(!unwinder_intact() && holds(100_900, Owner::Counter));
        released(100_000, i32::MAX);
        assert!(!holds(100_900, Owner::Counter));
        UNWINDER_LOST.store(false, Ordering::Relaxed);
    }

    #[test]
    fn a_release_waits_for_a_use_under_way() {
        assert!(claim(100_950, Owner::Trace));
        let using = in_use(100_950, Owner::Trace).expect("kept");
        assert!(in_use(100_950, Owner::Counter).is_none());
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let releaser = {
            let done = done.clone();
            std::thread::spawn(move || {
                released(100_950, 100_950);
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !done.load(Ordering::SeqCst),
            "the release went on during a use"
        );
        drop(using);
        releaser.join().expect("releaser");
        assert!(done.load(Ordering::SeqCst));
        assert!(
            in_use(100_950, Owner::Trace).is_none(),
            "released, yet usable"
        );
    }
}
