//! Sampling host allocations by bytes, as jemalloc and tcmalloc do: an allocation of `s` bytes is
//! sampled with probability `1 - exp(-s / mean)`, so every byte has the same chance of being in a
//! sampled block whatever the allocation sizes, and the CLI scales a sampled block by the inverse.
//!
//! Two modes:
//! - **thin** (the default): only sampled allocations, and the frees of sampled blocks, are recorded
//!   as events; every other call is only counted (`thin_totals`). Each thread counts down the usable
//!   bytes it allocates (`malloc_usable_size`) from an exponential draw with the configured mean, in
//!   its counting slot; the allocation that crosses zero is sampled, and noted in `sampled_blocks`,
//!   where its free finds it. The exponential is memoryless, so each allocation is sampled with the
//!   probability above, independently of every other: a loop that frees and allocates the same
//!   block has its calls sampled one by one, as any other.
//! - **every event** (`MEMSHIM_SAMPLE_EVENTS=all`): each thread counts down bytes allocated, and the
//!   allocation that crosses zero has its stack taken; the next countdown is drawn from an
//!   exponential distribution with the configured mean. Every allocation and free is still recorded
//!   (without a stack when unsampled), so totals, peaks and leaks stay exact in requested bytes.
//!
//! # Safety
//! The every-event mode's countdown lives in a thread word (`sys::thread_words`) where the shim was
//! preloaded, and in a `pthread_getspecific` slot otherwise (see `guard` for why not through
//! `__tls_get_addr`), created once at start; values are plain integers stored in the pointer.
#![allow(unsafe_code)]
pub(crate) mod sampled_blocks;
pub(crate) mod thin_totals;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use sampled_blocks as sampled;

use crate::record::mix::mix;
use crate::sys::thread_words as words;

const NO_KEY: u32 = u32::MAX;
static KEY: AtomicU32 = AtomicU32::new(NO_KEY);
static MEAN: AtomicU64 = AtomicU64::new(0);
static SEED: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);
static THIN: AtomicBool = AtomicBool::new(false);

/// Turns sampling on with a mean of `mean` bytes (0 leaves it off); `thin` records only the sampled
/// allocations as events.
pub fn init(mean: u64, thin: bool) {
    if mean == 0 {
        return;
    }
    if thin {
        if !crate::record::sampling::thin_totals::init() {
            crate::channel::warn(
                "no thread-specific keys are left for counting allocations; every allocation is recorded",
            );
        } else {
            // Other draws in each run.
            let seed = crate::sys::clock::monotonic_ns() ^ ((crate::sys::getpid() as u64) << 32);
            SEED.store(mix(seed), Ordering::Relaxed);
            MEAN.store(mean, Ordering::Release);
            THIN.store(true, Ordering::Release);
            return;
        }
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a valid out-pointer; no destructor.
    if unsafe { libc::pthread_key_create(&mut key, None) } == 0 {
        KEY.store(key, Ordering::Release);
        MEAN.store(mean, Ordering::Release);
    }
}

/// The mean bytes between samples, 0 when every stack is taken.
pub fn mean() -> u64 {
    MEAN.load(Ordering::Relaxed)
}

/// True in the thin mode: only sampled allocations are recorded as events.
#[inline(always)]
pub fn thin() -> bool {
    THIN.load(Ordering::Relaxed)
}

/// The running totals as a trace record, in the thin sampling mode (the only one that counts).
pub fn totals_record() -> Option<memshim_trace::Record> {
    thin().then(|| memshim_trace::Record::HeapTotals(thin_totals::totals()))
}

/// In the thin mode, an allocation of `size` bytes (`usable` given) at `addr`: counted; true when
/// it is a sampled one, whose event must be recorded (and its free's).
#[inline(always)]
pub fn thin_alloc(addr: u64, size: u64, usable: u64) -> bool {
    let mean = MEAN.load(Ordering::Relaxed);
    thin_totals::alloc(size, usable, || draw(mean)) && sampled::insert(addr)
}

/// In the thin mode, the free of the block at `addr` of `usable` bytes (`realloc`: the free half
/// of a realloc): counted; true when the block was a sampled one.
#[inline(always)]
pub fn thin_free(addr: u64, usable: u64, realloc: bool) -> bool {
    thin_totals::free(usable);
    sampled::free(addr, realloc)
}

/// In the thin mode, a realloc of the block at `addr` failed: its free is taken back; true when the
/// block is a sampled one.
pub fn thin_unfree(addr: u64, usable: u64) -> bool {
    thin_totals::unfree(usable);
    sampled::realloc_failed(addr)
}

/// In the thin mode, a realloc of the block at `addr` ended without it (moved or freed).
#[inline(always)]
pub fn thin_realloc_done(addr: u64) {
    sampled::realloc_done(addr);
}

/// True when the allocation of `size` bytes on this thread is a sampled one.
#[inline]
pub fn take(size: u64) -> bool {
    let mean = MEAN.load(Ordering::Relaxed);
    let key = KEY.load(Ordering::Relaxed);
    if mean == 0 || key == NO_KEY {
        return true;
    }
    let left = words::get_or_key(words::COUNTDOWN, key) as u64;
    let left = if left == 0 { draw(mean) } else { left };
    let (remaining, sampled) = match left.checked_sub(size) {
        Some(r) if r > 0 => (r, false),
        _ => (draw(mean), true),
    };
    words::set_or_key(words::COUNTDOWN, key, remaining as usize);
    sampled
}

/// An exponential draw with the given mean, at least 1.
fn draw(mean: u64) -> u64 {
    // SplitMix64 over a shared counter: one atomic add per sample, no lock, no allocation.
    let mut z = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // A uniform in (0, 1].
    let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    ((-u.ln()) * mean as f64).max(1.0) as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_average_the_mean() {
        let n = 20_000;
        let sum: u64 = (0..n).map(|_| super::draw(1000)).sum();
        let avg = sum as f64 / n as f64;
        assert!((avg - 1000.0).abs() < 50.0, "{avg}");
    }

    #[test]
    fn a_reused_size_is_sampled_call_by_call_with_the_chance_it_gives() {
        let _table = super::thin_totals::TABLE_IN_TEST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert!(super::thin_totals::init());
        // One thread allocating the same 72 usable bytes over and over, as a loop that frees and
        // allocates one block does: each call is a draw of its own.
        let (n, usable, mean) = (200_000u64, 72u64, 4096u64);
        let hits = std::thread::spawn(move || {
            (0..n)
                .filter(|_| super::thin_totals::alloc(64, usable, || super::draw(mean)))
                .count() as f64
        })
        .join()
        .expect("worker");
        let p = 1.0 - (-(usable as f64) / mean as f64).exp();
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (hits - n as f64 * p).abs() < 8.0 * sd,
            "{hits} sampled of {n}, expected {}",
            n as f64 * p
        );
    }
}
