//! The NUMA section: topology, placement and affinity calls, where large blocks live against where
//! their threads ran, and what that allows to conclude (threads in `numa_threads`, causes of remote
//! blocks in `first_touch`).
use memshim_trace::NumaFn;

use super::model::{Finding, NodeBytes, NumaCallOut, NumaNodeOut, NumaSection, PlacementOut};
use super::sites::{frames, program_site};
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

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
    let calls: Vec<NumaCallOut> = t
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
            site: None,
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
    let node_of = |cpu: u32| {
        t.topology
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    };
    let mut by_node: std::collections::BTreeMap<u32, u64> = Default::default();
    let mut placements: Vec<PlacementOut> = t
        .placements
        .iter()
        .map(|b| {
            let p = &b.placement;
            let resident: u32 = p.nodes.iter().map(|n| n.1).sum();
            for &(node, pages) in &p.nodes {
                *by_node.entry(node).or_default() +=
                    p.len * u64::from(pages) / u64::from(resident.max(1));
            }
            // `nodes` is sorted by node: the first of the largest counts, so a tie names the lowest.
            let majority = p.nodes.iter().rev().max_by_key(|n| n.1).map(|n| n.0);
            let alloc_node = b.alloc_cpu.and_then(node_of);
            let remote = matches!((alloc_node, majority), (Some(a), Some(m)) if a != m);
            let (cause, placed_by_call) = if remote {
                let (c, i) = super::first_touch::cause(b, &t.numa_calls);
                (Some(c), i)
            } else {
                (None, None)
            };
            PlacementOut {
                memory: match b.memory {
                    crate::replay::HostBlock::Heap => "heap",
                    crate::replay::HostBlock::Pinned => "pinned",
                    crate::replay::HostBlock::Registered => "registered",
                },
                bytes: p.len,
                pages_by_node: p.nodes.clone(),
                absent_pages: p.absent,
                node: majority,
                alloc_cpu: b.alloc_cpu,
                alloc_node,
                remote,
                cause,
                placed_by_call,
                sampled_pages: 0,
                site: None,
                frames: b.stack.map(|s| frames(t, sym, s)).unwrap_or_default(),
            }
        })
        .collect();
    placements.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    placements.truncate(50);
    let bytes_by_node = by_node
        .into_iter()
        .map(|(node, bytes)| NodeBytes { node, bytes })
        .collect();
    let mut findings = Vec::new();
    findings.extend(remote_memory(&placements));
    findings.extend(super::first_touch::findings(&placements, &calls));
    let (threads, migration) = super::numa_threads::threads(t, node_of);
    findings.extend(migration);
    let gpu_nodes: Vec<i32> = t.gpus.info.iter().map(|g| g.numa_node).collect();
    findings.extend(pinned_away_from_gpu(&placements, &gpu_nodes));
    if nodes.len() == 1 {
        findings.push(Finding {
            kind: "one_node",
            text: format!(
                "this machine has one NUMA node ({} CPUs): all memory is local to every CPU, so there is no misplacement to report",
                nodes[0].cpus.len()
            ),
         ..Default::default() });
    } else if nodes.len() > 1 {
        findings.push(Finding {
            kind: "numa_nodes",
            text: format!(
                "this machine has {} NUMA nodes; {} large buffers were sampled for placement",
                nodes.len(),
                t.placements.len()
            ),
            ..Default::default()
        });
    }
    NumaSection {
        nodes,
        calls,
        bytes_by_node,
        placements,
        threads,
        findings,
        ..Default::default()
    }
}

/// Large blocks mostly on another node than the CPU whose thread allocated them: the largest named with
/// its size, its node, the thread's CPU and node, and the program's line that allocated it.
fn remote_memory(placements: &[PlacementOut]) -> Option<Finding> {
    let remote: Vec<&PlacementOut> = placements.iter().filter(|p| p.remote).collect();
    let top = remote.first()?;
    // `remote` is only true when both nodes are known.
    let (Some(node), Some(alloc_node)) = (top.node, top.alloc_node) else {
        return None;
    };
    let cpu = top
        .alloc_cpu
        .map(|c| format!("CPU {c} of "))
        .unwrap_or_default();
    let site = program_site(&top.frames)
        .map(|s| format!(" allocated in {s}"))
        .unwrap_or_default();
    Some(Finding {
        kind: "remote_memory",
        text: format!(
            "{} large buffers ({} in all) live mostly on another NUMA node than the CPU that allocated them; the largest, {}{site}, sits on node {node} while the thread that allocated it ran on {cpu}node {alloc_node}: its accesses from there cross the interconnect. Bind the process or the data-loader workers with numactl --cpunodebind/--membind, or allocate on the node that uses the data",
            remote.len(),
            human_bytes(remote.iter().map(|p| p.bytes).sum()),
            human_bytes(top.bytes),
        ),
     bytes: Some(remote.iter().map(|p| p.bytes).sum()),
        site: super::site_label::label(&top.frames),
        ..Default::default() })
}

/// Pinned or registered buffers mostly on another node than the GPUs' (when NVML placed every GPU on
/// one node): each copy from them crosses the socket interconnect.
fn pinned_away_from_gpu(placements: &[PlacementOut], gpu_nodes: &[i32]) -> Option<Finding> {
    let mut gpu_nodes = gpu_nodes.to_vec();
    gpu_nodes.sort_unstable();
    gpu_nodes.dedup();
    let [gpu_node] = gpu_nodes[..] else {
        return None;
    };
    let gpu_node = u32::try_from(gpu_node).ok()?;
    let away: Vec<&PlacementOut> = placements
        .iter()
        .filter(|p| p.memory != "heap")
        .filter(|p| p.node.is_some_and(|n| n != gpu_node))
        .collect();
    let top = away.first()?;
    Some(Finding {
        kind: "pinned_remote",
        text: format!(
            "{} pinned buffers ({} in all) sit on another NUMA node than the GPU (node {gpu_node}): every copy from them crosses the socket interconnect; the largest, {}{}. Allocate pinned memory from threads bound to the GPU's node (numactl --cpunodebind={gpu_node} --membind={gpu_node}, or the DataLoader's pin-memory thread pinned there)",
            away.len(),
            human_bytes(away.iter().map(|p| p.bytes).sum()),
            human_bytes(top.bytes),
            crate::report::owner::first_program_function(&top.frames)
                .map(|f| format!(", was allocated in {f}"))
                .unwrap_or_default()
        ),
     ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::FrameOut;

    fn block(memory: &'static str, bytes: u64, nodes: Vec<(u32, u32)>) -> PlacementOut {
        PlacementOut {
            memory,
            bytes,
            node: nodes.iter().rev().max_by_key(|n| n.1).map(|n| n.0),
            pages_by_node: nodes,
            absent_pages: 0,
            alloc_cpu: None,
            alloc_node: None,
            remote: false,
            cause: None,
            placed_by_call: None,
            sampled_pages: 0,
            site: None,
            frames: Vec::new(),
        }
    }

    #[test]
    fn pinned_buffers_on_another_node_than_the_gpu_are_a_finding() {
        let blocks = vec![
            block("pinned", 8 << 20, vec![(1, 12), (0, 4)]),
            block("pinned", 4 << 20, vec![(0, 16)]),
            block("heap", 64 << 20, vec![(1, 16)]),
        ];
        let f = pinned_away_from_gpu(&blocks, &[0]).expect("a finding");
        assert!(
            f.text.starts_with(
                "1 pinned buffers (8.0 MiB in all) sit on another NUMA node than the GPU (node 0)"
            ),
            "{}",
            f.text
        );
        let f = pinned_away_from_gpu(&blocks, &[1]).expect("the 4 MiB one is away from node 1");
        assert!(
            f.text.starts_with("1 pinned buffers (4.0 MiB in all)"),
            "{}",
            f.text
        );
        assert!(
            pinned_away_from_gpu(&blocks, &[-1]).is_none(),
            "GPU node unknown"
        );
        assert!(
            pinned_away_from_gpu(&blocks, &[0, 1]).is_none(),
            "GPUs on both nodes"
        );
        assert!(pinned_away_from_gpu(&blocks, &[]).is_none(), "no NVML");
    }

    #[test]
    fn the_largest_remote_buffer_is_named_with_its_nodes_and_site() {
        let frame = |function: &str, file: Option<&str>, line: Option<u32>| FrameOut {
            kind: "native",
            function: Some(function.into()),
            file: file.map(Into::into),
            line,
            module: Some("/tmp/numa_cross_node".into()),
            address: "0x1000".into(),
            main_thread: false,
            offset: None,
            hidden: None,
            short_file: None,
        };
        let remote = |bytes: u64, cpu: u32, frames: Vec<FrameOut>| PlacementOut {
            alloc_cpu: Some(cpu),
            alloc_node: Some(1),
            remote: true,
            frames,
            ..block("heap", bytes, vec![(0, 12), (1, 4)])
        };
        let placements = vec![
            remote(
                64 << 20,
                3,
                vec![
                    frame(
                        "alloc_batch_buffer",
                        Some("/src/numa_cross_node.c"),
                        Some(65),
                    ),
                    frame("worker", Some("/src/numa_cross_node.c"), Some(109)),
                ],
            ),
            remote(8 << 20, 2, Vec::new()),
            block("heap", 16 << 20, vec![(1, 16)]),
        ];
        let f = remote_memory(&placements).expect("a finding");
        assert_eq!(f.kind, "remote_memory");
        assert!(
            f.text.starts_with(
                "2 large buffers (72.0 MiB in all) live mostly on another NUMA node than the CPU that allocated them; the largest, 64.0 MiB allocated in alloc_batch_buffer (numa_cross_node.c:65), sits on node 0 while the thread that allocated it ran on CPU 3 of node 1: "
            ),
            "{}",
            f.text
        );
        assert!(remote_memory(&placements[2..]).is_none(), "none remote");
    }
}
