//! Sampling host stacks by bytes, as jemalloc and tcmalloc do: each thread counts down bytes
//! allocated, and the allocation that crosses zero has its stack taken; the next countdown is drawn
//! from an exponential distribution with the configured mean, so every byte has the same chance of
//! being the sampled one whatever the allocation sizes. The CLI scales a sampled allocation of `s`
//! bytes by `1 / (1 - exp(-s / mean))`. Every allocation and free is still recorded (without a stack
//! when unsampled), so totals, peaks and leaks stay exact.
//!
//! # Safety
//! The countdown lives in a `pthread_getspecific` slot (see `guard` for why not a thread-local),
//! created once at start; values are plain integers stored in the pointer.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const NO_KEY: u32 = u32::MAX;
static KEY: AtomicU32 = AtomicU32::new(NO_KEY);
static MEAN: AtomicU64 = AtomicU64::new(0);
static SEED: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);

/// Turns sampling on with a mean of `mean` bytes (0 leaves it off).
pub fn init(mean: u64) {
    if mean == 0 {
        return;
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

/// True when the allocation of `size` bytes on this thread is a sampled one.
#[inline]
pub fn take(size: u64) -> bool {
    let mean = MEAN.load(Ordering::Relaxed);
    let key = KEY.load(Ordering::Relaxed);
    if mean == 0 || key == NO_KEY {
        return true;
    }
    // SAFETY: `key` was created by `init` and is never deleted.
    let left = unsafe { libc::pthread_getspecific(key) } as u64;
    let left = if left == 0 { draw(mean) } else { left };
    let (remaining, sampled) = match left.checked_sub(size) {
        Some(r) if r > 0 => (r, false),
        _ => (draw(mean), true),
    };
    // SAFETY: as above; the value is an integer, never dereferenced.
    unsafe { libc::pthread_setspecific(key, remaining as usize as *const libc::c_void) };
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
}
