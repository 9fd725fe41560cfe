//! The descriptors that the shim, or a library it loaded, keeps open for the whole run: the perf
//! counters and libunwind's memory-validation pipe. A program may close them (a daemon closes every
//! descriptor) and be given the same numbers for its own files; from then on they are the program's.
//! The `close`/`dup2`/`dup3`/`close_range`/`closefrom` hooks report every descriptor the program
//! releases here, before the real call, so their owners stop using them: the unwinder falls back to
//! libgcc (libunwind would otherwise read a byte from, write a byte to, and finally close a
//! descriptor that is now the program's), and a counter is never read or closed again.
//!
//! Never: allocate or lock; `released` runs on every `close` of the program.
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

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
/// Set once a descriptor of the unwinder's was released.
static UNWINDER_LOST: AtomicBool = AtomicBool::new(false);

/// Records that `owner` keeps `fd` open; false when no slot is left (the caller then should not
/// keep it).
pub fn claim(fd: i32, owner: Owner) -> bool {
    for (i, slot) in FDS.iter().enumerate() {
        if slot
            .compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            OWNERS[i].store(owner as u8, Ordering::Release);
            ANY.store(true, Ordering::Release);
            return true;
        }
    }
    false
}

/// Whether `fd` is still kept by `owner` (not released by the program since it was claimed).
pub fn holds(fd: i32, owner: Owner) -> bool {
    FDS.iter()
        .zip(OWNERS.iter())
        .any(|(f, o)| f.load(Ordering::Acquire) == fd && o.load(Ordering::Acquire) == owner as u8)
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

#[cold]
fn released_slow(lo: i32, hi: i32) {
    for (f, o) in FDS.iter().zip(OWNERS.iter()) {
        let fd = f.load(Ordering::Acquire);
        if fd >= 0 && fd >= lo && fd <= hi {
            if o.load(Ordering::Acquire) == Owner::Unwinder as u8 {
                UNWINDER_LOST.store(true, Ordering::Release);
            }
            f.store(-1, Ordering::Release);
            o.store(Owner::None as u8, Ordering::Release);
        }
    }
}

/// In tests: forget every claim.
#[cfg(test)]
fn reset() {
    for (f, o) in FDS.iter().zip(OWNERS.iter()) {
        f.store(-1, Ordering::Relaxed);
        o.store(0, Ordering::Relaxed);
    }
    UNWINDER_LOST.store(false, Ordering::Relaxed);
}

/// Held by every unit test that claims descriptors or wipes the registry (this module's, and the
/// perf counter's, whose reads check their claim): run in parallel, a wipe made another's claim
/// vanish mid-test.
#[cfg(test)]
pub(crate) static TEST_REGISTRY: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_descriptor_is_no_longer_held() {
        let _registry = TEST_REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reset();
        assert!(claim(900, Owner::Counter));
        assert!(claim(901, Owner::Unwinder));
        assert!(holds(900, Owner::Counter) && !holds(900, Owner::Unwinder));
        released(3, 899);
        assert!(holds(900, Owner::Counter) && unwinder_intact());
        released(901, 901);
        assert!(!unwinder_intact() && holds(900, Owner::Counter));
        released(0, i32::MAX);
        assert!(!holds(900, Owner::Counter));
        reset();
    }
}
