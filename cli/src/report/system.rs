//! The CPU-side sections: NUMA topology (with what it allows to conclude), performance counters with
//! the cache miss rate, and heap fragmentation.
use memshim_trace::NumaFn;

use super::build::frames;
use super::model::{
    CounterOut, CountersSection, Finding, FragmentationSection, NumaCallOut, NumaNodeOut,
    NumaSection,
};
use crate::render::human_bytes;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;

/// Above this cache miss rate the counters section flags it (the checklist's 10%).
const MISS_RATE: f64 = 0.10;

/// The memory policy's name.
fn policy_name(mode: i32) -> Option<String> {
    if mode < 0 {
        return None;
    }
    // The mode may carry MPOL_F_STATIC_NODES (1 << 15) or MPOL_F_RELATIVE_NODES (1 << 14).
    let base = match mode & 0x3fff {
        0 => "MPOL_DEFAULT",
        1 => "MPOL_PREFERRED",
        2 => "MPOL_BIND",
        3 => "MPOL_INTERLEAVE",
        4 => "MPOL_LOCAL",
        5 => "MPOL_PREFERRED_MANY",
        6 => "MPOL_WEIGHTED_INTERLEAVE",
        _ => return Some(format!("mode {mode}")),
    };
    let mut name = base.to_string();
    if mode & (1 << 15) != 0 {
        name.push_str("|MPOL_F_STATIC_NODES");
    }
    if mode & (1 << 14) != 0 {
        name.push_str("|MPOL_F_RELATIVE_NODES");
    }
    Some(name)
}

fn call_name(f: NumaFn) -> &'static str {
    match f {
        NumaFn::Mbind => "mbind",
        NumaFn::SetMempolicy => "set_mempolicy",
        NumaFn::MigratePages => "migrate_pages",
        NumaFn::MovePages => "move_pages",
        NumaFn::SchedSetaffinity => "sched_setaffinity",
        NumaFn::PthreadSetaffinity => "pthread_setaffinity_np",
    }
}

/// The NUMA section.
pub fn numa(t: &Replayed, sym: &mut Symbolizer) -> NumaSection {
    let calls = t
        .numa_calls
        .iter()
        .map(|(at, tid, c)| NumaCallOut {
            call: call_name(c.func),
            policy: policy_name(c.mode),
            nodes: c.nodes.clone(),
            from_nodes: c.from_nodes.clone(),
            cpus: c.cpus.clone(),
            bytes: c.len,
            target: c.target,
            flags: c.flags,
            result: c.result,
            time_s: at.saturating_sub(t.header.clock_start_ns) as f64 / 1e9,
            thread: *tid,
            frames: frames(t, sym, c.stack),
        })
        .collect();
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
    NumaSection {
        nodes,
        calls,
        findings,
    }
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
