//! Host memory bandwidth: the STREAM triad `a[i] = b[i] + s * c[i]`, counted as 3 × 8 bytes per
//! element, best of several repetitions, on one thread and on all.
use std::hint::black_box;
use std::time::Instant;

/// Best triad bandwidth in GB/s over `reps` repetitions with `threads` threads, on arrays of
/// `elements` f64 each.
pub fn triad_gbps(elements: usize, threads: usize, reps: usize) -> f64 {
    let threads = threads.max(1);
    let mut a = vec![0.0f64; elements];
    let b = vec![1.0f64; elements];
    let c = vec![2.0f64; elements];
    let chunk = elements.div_ceil(threads);
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        std::thread::scope(|s| {
            for ((a, b), c) in a
                .chunks_mut(chunk)
                .zip(b.chunks(chunk))
                .zip(c.chunks(chunk))
            {
                s.spawn(move || {
                    for i in 0..a.len() {
                        a[i] = b[i] + 3.0 * c[i];
                    }
                });
            }
        });
        best = best.min(start.elapsed().as_secs_f64());
        black_box(&a);
    }
    (3 * 8 * elements) as f64 / best / 1e9
}

#[cfg(test)]
mod tests {
    #[test]
    fn triad_measures_something_plausible() {
        let g = super::triad_gbps(1 << 20, 2, 3);
        assert!(g > 0.1 && g < 10_000.0, "{g}");
    }
}
