//! Stack capture on the hot path, and the lock-free table that makes each distinct stack travel once.
//!
//! Capture keeps raw return addresses (never symbols), drops the shim's own frames and merges in the
//! calling thread's Python frames when the process runs CPython. A stack is identified by a 64-bit hash of its frames; the first thread to insert a hash into the seen-table
//! sends the frames to the writer, every later use sends only the hash. The writer maps hashes to small
//! ids and also deduplicates, so a full table only costs bandwidth, never correctness.
//!
//! Never: symbolize, lock, or allocate here (the frames of a new stack are boxed through the shim's
//! own allocator, which calls the real malloc directly).
pub(crate) mod seen_table;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::config::MAX_STACK_DEPTH;

static SELF_LO: AtomicUsize = AtomicUsize::new(0);
static SELF_HI: AtomicUsize = AtomicUsize::new(0);
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Code of the CUDA driver and CUPTI, whose frames lie above the program's when the driver calls
/// the shim back (see `guard::enter_from_driver`): empty ranges until `set_driver_ranges`.
static DRIVER_RANGES: [(AtomicUsize, AtomicUsize); MAX_DRIVER_RANGES] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_DRIVER_RANGES];
const MAX_DRIVER_RANGES: usize = 8;

/// Tells capture which code is the driver's and CUPTI's (executable segments, `[lo, hi)`); ranges
/// beyond the first eight are left out.
pub fn set_driver_ranges(ranges: &[(usize, usize)]) {
    for (i, slot) in DRIVER_RANGES.iter().enumerate() {
        let (lo, hi) = ranges.get(i).copied().unwrap_or((0, 0));
        slot.0.store(lo, Ordering::Relaxed);
        slot.1.store(hi, Ordering::Relaxed);
    }
}

fn in_driver(ip: u64) -> bool {
    let ip = ip as usize;
    DRIVER_RANGES
        .iter()
        .any(|(lo, hi)| ip >= lo.load(Ordering::Relaxed) && ip < hi.load(Ordering::Relaxed))
}

/// Tells capture which addresses are the shim's own code.
pub fn set_self_range(lo: usize, hi: usize) {
    SELF_LO.store(lo, Ordering::Relaxed);
    SELF_HI.store(hi, Ordering::Relaxed);
}

/// True when `addr` is in the shim's own code.
pub fn in_self(addr: usize) -> bool {
    addr >= SELF_LO.load(Ordering::Relaxed) && addr < SELF_HI.load(Ordering::Relaxed)
}

/// Starts a new generation of stack hashes, so a fork child re-sends every stack to its own trace.
pub fn new_epoch() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// Stack left below the capture that libunwind (and reading Python frames) needs, and that any
/// unwinder needs; with less, the call is recorded without its stack.
const MIN_ROOM_FAST: usize = 32 << 10;
pub const MIN_ROOM_ANY: usize = 16 << 10;

/// Room a capture needs: the deepest stack kept, the shim's own frames above it, and the Python
/// frames merged in.
pub const CAPTURE_LEN: usize = MAX_STACK_DEPTH + DRIVER_FRAMES + crate::python::MAX_PY_FRAMES;
/// Room enough for a capture of the default depth (64) without Python frames: the buffer of nearly
/// every capture outside a Python process. Zeroing [`CAPTURE_LEN`] words (3.3 KiB) on each
/// allocation was 6% of malloc_heavy's samples with full stacks.
pub const SMALL_CAPTURE_LEN: usize = SMALL_DEPTH + DRIVER_FRAMES;
/// The deepest capture [`SMALL_CAPTURE_LEN`] holds.
pub const SMALL_DEPTH: usize = 64;
/// The shim's own frames the unwinder may report above the caller's (dropped).
const SELF_FRAMES: usize = 16;
/// Those, with the driver's and CUPTI's when the driver called the shim back.
const DRIVER_FRAMES: usize = 40;

/// Captures up to `depth` frames of the calling thread into `out`, innermost first, skipping the
/// shim's own frames at the top; returns how many. `out` holds [`CAPTURE_LEN`] words, or
/// [`SMALL_CAPTURE_LEN`] when `depth` fits it and `python::may_merge` said false: the depth is cut
/// to what fits, and Python frames are merged only where they have room. `room` is the stack left below the caller (`None`
/// when unknown), at least [`MIN_ROOM_ANY`]: with less than [`MIN_ROOM_FAST`] libgcc's unwinder is
/// used, which needs less than libunwind, and Python frames are left out. With `lend_python`, a
/// thread without Python frames gets the main thread's. The caller's buffer is written in place (no
/// second buffer, no copy back): this runs for every allocation.
#[inline(never)]
pub fn capture(out: &mut [u64], depth: usize, lend_python: bool, room: Option<usize>) -> usize {
    let depth = depth
        .min(MAX_STACK_DEPTH)
        .min(out.len().saturating_sub(DRIVER_FRAMES));
    let lo = SELF_LO.load(Ordering::Relaxed) as u64;
    let hi = SELF_HI.load(Ordering::Relaxed) as u64;
    // A CUDA call delivered by the driver's callback (a rare call, with `lend_python`): its top
    // frames are the driver's and CUPTI's, dropped like the shim's own.
    let driver_top = lend_python && crate::record::guard::from_driver();
    let ours = |ip: u64| (ip >= lo && ip < hi) || (driver_top && in_driver(ip));
    // libunwind and reading Python frames (whose buffers take about 4 KiB, 20 KiB for frames lent
    // by the main thread) need the most stack.
    let roomy = room.is_none_or(|r| r >= MIN_ROOM_FAST);
    let fast = if roomy {
        let above = if driver_top {
            DRIVER_FRAMES
        } else {
            SELF_FRAMES
        };
        // Not a cancellation point (see `without_cancellation`): libunwind `read`s a pipe.
        crate::sys::without_cancellation(|| {
            crate::record::unwind::backtrace(&mut out[..depth + above])
        })
    } else {
        None
    };
    let len = match fast {
        Some(n) => {
            let skip = out[..n]
                .iter()
                .take_while(|&&ip| ip != 0 && ours(ip))
                .count();
            let end = out[skip..n]
                .iter()
                .position(|&ip| ip == 0)
                .map_or(n, |p| skip + p);
            let len = (end - skip).min(depth);
            out.copy_within(skip..skip + len, 0);
            len
        }
        None => {
            let mut skipping = true;
            let mut len = 0;
            crate::record::unwind::gcc_frames(|ip| {
                if ip == 0 || len >= depth {
                    return false;
                }
                if skipping && ours(ip) {
                    return true;
                }
                skipping = false;
                out[len] = ip;
                len += 1;
                len < depth
            });
            len
        }
    };
    if roomy && out.len() >= len + crate::python::MAX_PY_FRAMES {
        crate::python::merge(out, len, lend_python)
    } else {
        len
    }
}

/// A 64-bit hash of a stack, never 0 (0 marks an empty table slot).
pub fn hash(frames: &[u64]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64 ^ EPOCH.load(Ordering::Relaxed) ^ (frames.len() as u64);
    for &f in frames {
        h = (h.rotate_left(23) ^ f).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    // Final avalanche (MurmurHash3's fmix64).
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^= h >> 33;
    h.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_every_frame_and_order() {
        let a = hash(&[1, 2, 3]);
        assert_ne!(a, hash(&[1, 2, 4]));
        assert_ne!(a, hash(&[3, 2, 1]));
        assert_ne!(a, hash(&[1, 2]));
        assert_eq!(a, hash(&[1, 2, 3]));
        assert_ne!(hash(&[]), 0);
    }

    /// The shim's range is the process's: the tests that set it take turns.
    static RANGE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn range() -> std::sync::MutexGuard<'static, ()> {
        RANGE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn capture_skips_nothing_outside_the_shim_range_and_respects_depth() {
        let _range = range();
        set_self_range(0, 0);
        let mut buf = [0u64; CAPTURE_LEN];
        let n = capture(&mut buf, 3, false, None);
        assert_eq!(n, 3);
        assert!(buf[..n].iter().all(|&f| f != 0));
    }

    #[test]
    fn the_shims_own_frames_at_the_top_are_dropped() {
        // With every address counted as the shim's, nothing is left; with none, frames are kept.
        let _range = range();
        let mut buf = [0u64; CAPTURE_LEN];
        set_self_range(0, usize::MAX);
        assert_eq!(capture(&mut buf, 64, false, None), 0);
        set_self_range(0, 0);
        assert!(capture(&mut buf, 64, false, None) > 0);
    }

    #[test]
    fn a_deep_stack_fills_the_depth_asked_for_and_the_small_buffer_cuts_it_to_its_room() {
        fn deep(n: usize, f: &mut dyn FnMut()) {
            if n == 0 {
                f();
            } else {
                deep(n - 1, f);
            }
            std::hint::black_box(n);
        }
        let _range = range();
        set_self_range(0, 0);
        deep(150, &mut || {
            let mut big = [0u64; CAPTURE_LEN];
            assert_eq!(capture(&mut big, 100, false, None), 100);
            let mut small = [0u64; SMALL_CAPTURE_LEN];
            assert_eq!(capture(&mut small, 100, false, None), SMALL_DEPTH);
            assert_eq!(capture(&mut small, 64, false, None), 64);
        });
    }
}
