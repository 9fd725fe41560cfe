//! The counters section: the process's performance counters at the end (with the cache miss rate
//! flagged above 10%), why those that could not be opened were not, and their totals over time.
use super::model::{CounterOut, CounterSeriesOut, CountersSection, Finding};
use crate::replay::Replayed;

/// Above this cache miss rate the counters section flags it (the checklist's 10%).
const MISS_RATE: f64 = 0.10;

/// The counters section.
pub fn counters(t: &Replayed) -> CountersSection {
    let values: Vec<CounterOut> = t
        .counters
        .iter()
        .map(|c| CounterOut {
            name: c.name.clone(),
            value: c.value,
            error: c.error.clone(),
        })
        .collect();
    let get = |name: &str| values.iter().find(|c| c.name == name).and_then(|c| c.value);
    let mut findings = Vec::new();
    for (what, refs, misses) in [
        ("cache", "cache_references", "cache_misses"),
        ("last-level cache load", "llc_loads", "llc_load_misses"),
    ] {
        if let (Some(r), Some(m)) = (get(refs), get(misses)) {
            let rate = m as f64 / r.max(1) as f64;
            if r > 0 && rate > MISS_RATE {
                findings.push(Finding {
                    kind: "cache_misses",
                    text: format!(
                        "{:.0}% {what} miss rate ({m} of {r}): above 10%, memory access patterns are hurting; look for random access over large data and for data structures that could be packed or traversed in order",
                        rate * 100.0
                    ),
                 ..Default::default() });
            }
        }
    }
    let unavailable: Vec<&str> = values
        .iter()
        .filter(|c| c.value.is_none())
        .map(|c| c.name.as_str())
        .collect();
    if !unavailable.is_empty() {
        findings.push(Finding {
            kind: "counters_unavailable",
            text: format!(
                "not measured on this machine: {} (see each counter's error)",
                unavailable.join(", ")
            ),
            ..Default::default()
        });
    }
    let start = t.header.clock_start_ns;
    let series = t
        .counter_series
        .by_name
        .iter()
        .map(|(name, s)| CounterSeriesOut {
            name: name.clone(),
            points: s
                .points()
                .iter()
                .map(|&(at, v)| (at.saturating_sub(start) as f64 / 1e9, v))
                .collect(),
        })
        .collect();
    CountersSection {
        values,
        series,
        findings,
        ..Default::default()
    }
}
