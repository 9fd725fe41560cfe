//! A bounded time series: at most [`MAX_POINTS`] points however long the run. When full, neighbouring
//! points are merged pairwise, keeping the larger value (for memory, the peaks are what matter), so
//! the series' resolution halves each time the run doubles.
/// Points kept at most.
pub const MAX_POINTS: usize = 2048;

/// (time ns, value) points, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Series {
    points: Vec<(u64, u64)>,
    /// Points closer in time than this are merged into the previous one.
    resolution_ns: u64,
}

impl Series {
    /// Records `value` at time `t` (times arrive in order, give or take a thread's jitter).
    pub fn push(&mut self, t: u64, value: u64) {
        if let Some(last) = self.points.last_mut() {
            if t < last.0.saturating_add(self.resolution_ns.max(1)) {
                last.1 = last.1.max(value);
                return;
            }
        }
        self.points.push((t, value));
        if self.points.len() >= MAX_POINTS {
            let merged: Vec<(u64, u64)> = self
                .points
                .chunks(2)
                .map(|c| (c[0].0, c.iter().map(|p| p.1).max().unwrap_or(0)))
                .collect();
            let span = merged.last().map_or(0, |l| l.0) - merged.first().map_or(0, |f| f.0);
            self.resolution_ns = (span / (MAX_POINTS as u64 / 2))
                .max(self.resolution_ns * 2)
                .max(1);
            self.points = merged;
        }
    }

    /// The points.
    pub fn points(&self) -> &[(u64, u64)] {
        &self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_bounded_and_keeps_the_peak() {
        let mut s = Series::default();
        for i in 0..1_000_000u64 {
            s.push(i * 1000, if i == 777_777 { 1 << 40 } else { i % 1000 });
        }
        assert!(s.points().len() <= MAX_POINTS);
        assert!(
            s.points().iter().any(|p| p.1 == 1 << 40),
            "the peak survives merging"
        );
        assert!(s.points().windows(2).all(|w| w[0].0 < w[1].0));
    }
}
