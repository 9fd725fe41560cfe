//! One-line forms of the CPU memory system's details (fragmentation size classes, counters over
//! time, threads that moved between NUMA nodes, why a remote block is remote), shared by the text and
//! Markdown renderers so that both say the same words.
use crate::report::model::{CountersSection, NumaThreadOut, PlacementOut, SizeClassOut};
use crate::units::human_bytes;

/// "holes left by frees of 513 B-1.0 KiB blocks: 19.1 MiB in 20000 holes (most often 1000 B)".
pub fn size_class_line(c: &SizeClassOut) -> String {
    format!(
        "holes left by frees of {}-{} blocks: {} in {} holes (most often {} B)",
        human_bytes(c.min_bytes),
        human_bytes(c.max_bytes),
        human_bytes(c.hole_bytes),
        c.holes,
        c.common_size
    )
}

/// How the counters grew over the run, for the first few that were sampled; `None` without samples.
pub fn counter_series_line(c: &CountersSection) -> Option<String> {
    let parts: Vec<String> = c
        .series
        .iter()
        .filter_map(|s| {
            let (first, last) = (s.points.first()?, s.points.last()?);
            Some(format!(
                "{} {} at {:.1} s to {} at {:.1} s",
                s.name, first.1, first.0, last.1, last.0
            ))
        })
        .take(4)
        .collect();
    let samples = c.samples?;
    (!parts.is_empty()).then(|| format!("over time ({samples} samples): {}", parts.join("; ")))
}

/// "thread 41 (migrator) ran on node 0 (6 samples), node 1 (5 samples), CPUs [0, 1]: MIGRATED".
pub fn thread_line(t: &NumaThreadOut) -> String {
    let name = if t.name.is_empty() {
        String::new()
    } else {
        format!(" ({})", t.name)
    };
    let nodes: Vec<String> = t
        .samples_by_node
        .iter()
        .map(|(node, n)| format!("node {node} ({n} samples)"))
        .collect();
    let moved = if t.migrated { ": MIGRATED" } else { "" };
    format!(
        "thread {}{name} ran on {}, CPUs {:?}{moved}",
        t.tid,
        nodes.join(", "),
        t.cpus
    )
}

/// What put a remote block where it is, as a suffix; empty when it is not remote.
pub fn cause_suffix(b: &PlacementOut) -> &'static str {
    match b.cause {
        Some("first_touch") => " (no placement call: first touched from another node)",
        Some("placement_call") => " (placed there by a placement call)",
        _ => "",
    }
}
