//! Performance counters over time: the running totals the shim reads about once a second while the
//! process runs, one bounded series per counter (the end values stay in `Replayed::counters`).
//! Never: holds more than [`super::timeline::MAX_POINTS`] points per counter, or more than
//! [`MAX_COUNTERS`] counters, whatever the trace says.
use memshim_trace::Counter;

use super::timeline::Series;

/// Counters followed at most (the shim has eight).
pub const MAX_COUNTERS: usize = 32;

/// Each counter's totals over time, in the order the counters were first seen.
#[derive(Debug, Default)]
pub struct CounterSeries {
    pub by_name: Vec<(String, Series)>,
}

impl CounterSeries {
    /// One reading at `t` (clock ns): counters without a value are left out.
    pub fn sample(&mut self, t: u64, values: &[Counter]) {
        for c in values {
            let Some(v) = c.value else { continue };
            match self.by_name.iter().position(|(n, _)| *n == c.name) {
                // Totals only grow, so the merging series keeps the later one of two neighbours.
                Some(i) => self.by_name[i].1.push(t, v),
                None if self.by_name.len() < MAX_COUNTERS => {
                    let mut s = Series::default();
                    s.push(t, v);
                    self.by_name.push((c.name.clone(), s));
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, value: Option<u64>) -> Counter {
        Counter {
            name: name.into(),
            value,
            error: None,
        }
    }

    #[test]
    fn one_series_per_counter_in_order() {
        let mut s = CounterSeries::default();
        s.sample(
            1_000,
            &[c("page_faults_minor", Some(10)), c("cache_misses", None)],
        );
        s.sample(
            2_000,
            &[
                c("page_faults_minor", Some(25)),
                c("context_switches", Some(3)),
            ],
        );
        let names: Vec<&str> = s.by_name.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["page_faults_minor", "context_switches"]);
        assert_eq!(s.by_name[0].1.points(), [(1_000, 10), (2_000, 25)]);
        assert_eq!(s.by_name[1].1.points(), [(2_000, 3)]);
    }
}
