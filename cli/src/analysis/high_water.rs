//! A site's high-water history: the points where its live bytes set a new high, thinned to at most
//! [`MAX_POINTS`] (every other point dropped, first and last kept), so memory stays bounded however
//! long the run. What the growth analysis (`growth`) judges a site by.

/// High-water points kept per site.
pub const MAX_POINTS: usize = 32;

/// A site's high-water history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HighWater {
    /// (time ns, live bytes) at each kept new high.
    pub points: Vec<(u64, u64)>,
}

impl HighWater {
    /// Notes the site's live bytes after an allocation.
    pub fn observe(&mut self, t: u64, live: u64) {
        if self.points.last().is_some_and(|&(_, hi)| live <= hi) {
            return;
        }
        self.points.push((t, live));
        if self.points.len() > MAX_POINTS {
            let last = *self.points.last().expect("non-empty");
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            if self.points.last() != Some(&last) {
                self.points.push(last);
            }
        }
    }

    /// Folds in another curve of the same site (another memory kind): the running maximum over both
    /// curves' points, a lower bound of their sum because the two kinds' highs need not coincide.
    pub fn merge(&mut self, other: &HighWater) {
        let mut all: Vec<(u64, u64)> = self
            .points
            .drain(..)
            .chain(other.points.iter().copied())
            .collect();
        all.sort_unstable();
        for (t, live) in all {
            self.observe(t, live);
        }
    }
}
