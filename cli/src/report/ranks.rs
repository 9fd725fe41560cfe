//! Processes in a job: what each one is (its role) and, for a distributed job, the ranks side by side
//! with where they differ.
use super::model::{Finding, Process, RankOut, RankRow, RanksSection};
use crate::replay::Replayed;
use crate::units::human_bytes;

/// A rank's peak or total must differ from the smallest by this factor, and by [`MIN_GAP`], to be
/// called an imbalance.
const IMBALANCE: f64 = 1.2;
const MIN_GAP: u64 = 64 << 20;

/// One figure of a rank's row.
type Measure = fn(&RankRow) -> u64;

/// The rank a trace recorded, for the report.
pub fn rank(t: &Replayed) -> Option<RankOut> {
    t.rank.as_ref().map(|r| RankOut {
        rank: r.rank,
        local_rank: r.local_rank,
        world_size: r.world_size,
        launcher: r.launcher.clone(),
    })
}

/// True when the process ran PyTorch's DataLoader worker loop (its Python frames name it).
pub fn is_dataloader_worker(t: &Replayed) -> bool {
    t.py_codes
        .values()
        .any(|f| f.name == "_worker_loop" && f.file.contains("torch/utils/data"))
}

/// What a process is, in words: `rank 1`, `DataLoader worker of rank 1`, `DataLoader worker`,
/// `fork child`, `child` (of a traced process) or `main`.
pub fn role(p: &Process, pids: &[u32], dataloader_worker: bool) -> String {
    let rank = p.rank.as_ref().map(|r| r.rank);
    match (dataloader_worker, rank) {
        (true, Some(r)) => format!("DataLoader worker of rank {r}"),
        (true, None) => "DataLoader worker".into(),
        (false, Some(r)) if !p.forked => format!("rank {r}"),
        _ if p.forked => "fork child".into(),
        _ if pids.contains(&p.ppid) => "child".into(),
        _ => "main".into(),
    }
}

/// The ranks of a distributed job side by side (rank processes only, not their forked workers);
/// `None` when no process was a rank.
pub fn section(processes: &[Process]) -> Option<RanksSection> {
    let mut rows: Vec<RankRow> = processes
        .iter()
        .filter(|p| !p.forked)
        .filter_map(|p| {
            let r = p.rank.as_ref()?;
            let by = |dir: &str| -> u64 {
                p.transfers
                    .summary
                    .iter()
                    .filter(|t| t.direction == dir)
                    .map(|t| t.bytes)
                    .sum()
            };
            Some(RankRow {
                host: p.hostname.clone(),
                rank: r.rank,
                local_rank: r.local_rank,
                pid: p.pid,
                peak_device_bytes: p.device.peak_bytes,
                leaked_device_bytes: p.leaks.device.bytes,
                leaked_host_bytes: p.leaks.host.program_bytes,
                growing_sites: (p.growth.host.len()
                    + p.growth.mappings.len()
                    + p.growth.device.len()) as u64,
                htod_bytes: by("HtoD"),
                dtoh_bytes: by("DtoH"),
                dtod_bytes: by("DtoD"),
                transfer_seconds: p
                    .transfers
                    .summary
                    .iter()
                    .map(|t| t.seconds.unwrap_or(0.0) + t.async_blocked_seconds)
                    .sum(),
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| (&a.host, a.rank, a.pid).cmp(&(&b.host, b.rank, b.pid)));
    let mut findings = Vec::new();
    let measures: [(&str, Measure); 3] = [
        ("peak device memory", |r| r.peak_device_bytes),
        ("leaked device memory", |r| r.leaked_device_bytes),
        ("bytes copied host to device", |r| r.htod_bytes),
    ];
    for (what, get) in measures {
        let (Some(lo), Some(hi)) = (
            rows.iter().min_by_key(|r| get(r)),
            rows.iter().max_by_key(|r| get(r)),
        ) else {
            continue;
        };
        let (a, b) = (get(lo), get(hi));
        if b >= a + MIN_GAP && b as f64 > a as f64 * IMBALANCE {
            findings.push(Finding {
                kind: "rank_imbalance",
                text: format!(
                    "ranks differ in {what}: rank {} has {}, rank {} has {}{}; the busiest rank sets the pace (and the memory limit) of the whole job",
                    hi.rank,
                    human_bytes(b),
                    lo.rank,
                    human_bytes(a),
                    if a > 0 { format!(" ({:.1}x)", b as f64 / a as f64) } else { String::new() }
                ),
             ..Default::default() });
        }
    }
    Some(RanksSection { rows, findings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fixture_report;

    #[test]
    fn roles_from_rank_fork_and_worker_loop() {
        let mut p = fixture_report().processes.remove(0);
        let pids = [p.pid, p.ppid];
        assert_eq!(role(&p, &[p.pid], false), "main");
        assert_eq!(role(&p, &pids, false), "child");
        p.rank = Some(RankOut {
            rank: 1,
            local_rank: Some(1),
            world_size: Some(2),
            launcher: "torchrun".into(),
        });
        assert_eq!(role(&p, &pids, false), "rank 1");
        assert_eq!(role(&p, &pids, true), "DataLoader worker of rank 1");
        p.forked = true;
        assert_eq!(role(&p, &pids, false), "fork child");
    }

    #[test]
    fn ranks_side_by_side_with_an_imbalance_finding() {
        let report = fixture_report();
        assert!(section(&report.processes).is_none(), "no ranks, no section");
        let mut ranks: Vec<Process> = Vec::new();
        for (rank, peak) in [(1u32, 3u64 << 30), (0, 1 << 30)] {
            let mut p = fixture_report().processes.remove(0);
            p.pid = 100 + rank;
            p.device.peak_bytes = peak;
            p.rank = Some(RankOut {
                rank,
                local_rank: Some(rank),
                world_size: Some(2),
                launcher: "torchrun".into(),
            });
            ranks.push(p);
        }
        let s = section(&ranks).expect("a ranks section");
        assert_eq!(
            s.rows.iter().map(|r| r.rank).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(s.rows[1].peak_device_bytes, 3 << 30);
        assert_eq!(s.rows[0].htod_bytes, ranks[1].transfers.summary[0].bytes);
        let f: Vec<&str> = s.findings.iter().map(|f| f.text.as_str()).collect();
        assert!(
            f.iter().any(|t| t.starts_with(
                "ranks differ in peak device memory: rank 1 has 3.0 GiB, rank 0 has 1.0 GiB (3.0x)"
            )),
            "{f:?}"
        );
    }
}
