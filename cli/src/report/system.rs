//! The CPU-side sections: NUMA topology (with what it allows to conclude), performance counters with
//! the cache miss rate, and heap fragmentation.
use super::model::{
    CounterOut, CountersSection, Finding, FragmentationSection, NumaNodeOut, NumaSection,
};
use crate::render::human_bytes;
use crate::replay::Replayed;

/// Above this cache miss rate the counters section flags it (the checklist's 10%).
const MISS_RATE: f64 = 0.10;

/// The NUMA section.
pub fn numa(t: &Replayed) -> NumaSection {
    let nodes: Vec<NumaNodeOut> = t
        .topology
        .iter()
        .map(|n| NumaNodeOut {
            id: n.id,
            cpus: n.cpus.clone(),
            distances: n.distances.clone(),
        })
        .collect();
    let mut findings = Vec::new();
    if nodes.len() == 1 {
        findings.push(Finding {
            kind: "one_node",
            text: format!(
                "this machine has one NUMA node ({} CPUs): all memory is local to every CPU, so there is no misplacement to report",
                nodes[0].cpus.len()
            ),
        });
    } else if nodes.len() > 1 {
        findings.push(Finding {
            kind: "numa_nodes",
            text: format!(
                "this machine has {} NUMA nodes; placement sampling is not recorded yet, so misplacement is not measured",
                nodes.len()
            ),
        });
    }
    NumaSection { nodes, findings }
}

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
                });
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
        });
    }
    CountersSection { values, findings }
}

/// The fragmentation section.
pub fn fragmentation(t: &Replayed) -> FragmentationSection {
    let f = &t.fragmentation;
    let (held, ratio) = f.worst_held();
    let when = f.worst.as_ref().map_or(0, |(t, _)| *t);
    let mut findings = Vec::new();
    if held >= 1 << 20 && ratio >= 0.15 {
        findings.push(Finding {
            kind: "heap_fragmentation",
            text: format!(
                "the C library's heap held {} free that it could not return to the system ({:.0}% of its arena): blocks of different sizes and lifetimes interleave, so freed holes sit under live blocks. Allocating long-lived data together, size classes, or an allocator like jemalloc reduce it",
                human_bytes(held),
                ratio * 100.0
            ),
        });
    }
    FragmentationSection {
        samples: f.samples,
        peak_free_held_bytes: held,
        peak_free_held_time_s: when.saturating_sub(t.header.clock_start_ns) as f64 / 1e9,
        peak_free_held_ratio: ratio,
        peak_arena_bytes: f.peak_arena,
        peak_rss_bytes: f.peak_rss,
        findings,
    }
}
