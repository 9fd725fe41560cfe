//! Threads that ran on more than one NUMA node: from the shim's samples of each thread's CPU (taken
//! only on a machine with several nodes, about every 100 ms), mapped to nodes with the trace's
//! topology. Memory a thread first touched stays on the node it ran on then, so a thread the
//! scheduler moves (or that moves itself) to another node reaches its data across the interconnect.
//! Never: concludes anything on one node, or from a thread seen in a single sample.
use std::collections::BTreeMap;

use super::model::{Finding, NumaThreadOut};
use crate::replay::Replayed;

/// Threads listed at most (those that moved first).
const MAX_LISTED: usize = 100;

/// The sampled threads, those that ran on several nodes first, and the finding about them.
pub fn threads(
    t: &Replayed,
    node_of: impl Fn(u32) -> Option<u32>,
) -> (Vec<NumaThreadOut>, Option<Finding>) {
    let start = t.header.clock_start_ns;
    let secs = |at: u64| at.saturating_sub(start) as f64 / 1e9;
    let mut out: Vec<NumaThreadOut> = t
        .threads
        .by_tid
        .iter()
        .map(|(&tid, seen)| {
            let mut by_node: BTreeMap<u32, u64> = BTreeMap::new();
            for (&cpu, &n) in &seen.cpus {
                if let Some(node) = node_of(cpu) {
                    *by_node.entry(node).or_default() += n;
                }
            }
            NumaThreadOut {
                tid,
                name: seen.name.clone(),
                samples: seen.cpus.values().sum(),
                cpus: seen.cpus.keys().copied().collect(),
                migrated: by_node.len() > 1,
                samples_by_node: by_node.into_iter().collect(),
                first_time_s: secs(seen.first_t),
                last_time_s: secs(seen.last_t),
            }
        })
        .collect();
    out.sort_by_key(|th| (!th.migrated, std::cmp::Reverse(th.samples), th.tid));
    out.truncate(MAX_LISTED);
    let finding = migration(&out);
    (out, finding)
}

/// The finding: which threads moved, with their samples per node, and the fix.
fn migration(threads: &[NumaThreadOut]) -> Option<Finding> {
    let moved: Vec<&NumaThreadOut> = threads.iter().filter(|th| th.migrated).collect();
    if moved.is_empty() {
        return None;
    }
    let each: Vec<String> = moved
        .iter()
        .take(5)
        .map(|th| {
            let nodes: Vec<String> = th
                .samples_by_node
                .iter()
                .map(|(node, n)| format!("{n} times on node {node}"))
                .collect();
            let name = if th.name.is_empty() {
                String::new()
            } else {
                format!(" ({})", th.name)
            };
            format!("thread {}{name} sampled {}", th.tid, nodes.join(", "))
        })
        .collect();
    Some(Finding {
        kind: "thread_migration",
        text: format!(
            "{} threads ran on more than one NUMA node ({}); the memory a thread first touched stays on the node it ran on then, so after a move its accesses cross the interconnect. Keep each thread on one node: numactl --cpunodebind=N --membind=N for the whole process, taskset -c with one node's CPUs, or for PyTorch DataLoader workers a worker_init_fn that calls os.sched_setaffinity(0, <one node's CPUs>)",
            moved.len(),
            each.join("; ")
        ),
     ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: u32, name: &str, by_node: Vec<(u32, u64)>) -> NumaThreadOut {
        NumaThreadOut {
            tid,
            name: name.into(),
            samples: by_node.iter().map(|n| n.1).sum(),
            cpus: Vec::new(),
            migrated: by_node.len() > 1,
            samples_by_node: by_node,
            first_time_s: 0.0,
            last_time_s: 1.0,
        }
    }

    #[test]
    fn only_threads_on_several_nodes_are_named() {
        let threads = vec![
            thread(41, "migrator", vec![(0, 6), (1, 5)]),
            thread(40, "main", vec![(0, 12)]),
        ];
        let f = migration(&threads).expect("a finding");
        assert_eq!(f.kind, "thread_migration");
        assert!(
            f.text.starts_with(
                "1 threads ran on more than one NUMA node (thread 41 (migrator) sampled 6 times on node 0, 5 times on node 1); "
            ),
            "{}",
            f.text
        );
        assert!(migration(&threads[1..]).is_none());
    }
}
