//! How much each finding matters, by its kind: the `severity` of the JSON contract and the order
//! of the verdict. "high": the program failed or is about to (out of memory, a device full);
//! "medium": memory or time at stake that a change in the program wins back (growth, slow or
//! misplaced copies, remote memory); "low": worth knowing, rarely worth acting on alone; "info": a
//! note about the machine or the measurement, not the program, said once per report.
//!
//! Judges only by kind; the bytes at stake order findings of one severity. Never drops a finding.
use super::model::{Finding, Process, Report};

/// The severity of a finding of `kind`.
pub fn of(kind: &str) -> &'static str {
    match kind {
        "out_of_memory" | "torch_oom" | "capacity_bound" => "high",
        "growth"
        | "released_growth"
        | "device_leak"
        | "near_capacity"
        | "gpu_idle"
        | "bandwidth_bound"
        | "sync_copies"
        | "pageable_copy"
        | "pageable_async_copy"
        | "repeated_copy"
        | "small_copies"
        | "pinning_would_save"
        | "below_ceiling"
        | "remote_memory"
        | "placed_remote"
        | "pinned_remote"
        | "first_touch"
        | "thread_migration"
        | "managed_migrations"
        | "torch_step_growth"
        | "torch_released_growth"
        | "rank_imbalance"
        | "trace_incomplete" => "medium",
        "one_node"
        | "numa_nodes"
        | "counters_unavailable"
        | "attached_cuda_unseen"
        | "attached_cuda_start" => "info",
        _ => "low",
    }
}

/// The order of severities, most pressing first.
pub fn rank(severity: &str) -> u8 {
    match severity {
        "high" => 0,
        "medium" => 1,
        "low" => 2,
        _ => 3,
    }
}

/// Every finding of a process, section by section.
pub fn findings_mut(p: &mut Process) -> impl Iterator<Item = &mut Finding> {
    p.growth
        .findings
        .iter_mut()
        .chain(&mut p.device.findings)
        .chain(&mut p.torch.findings)
        .chain(&mut p.torch.steps.findings)
        .chain(&mut p.transfers.findings)
        .chain(&mut p.numa.findings)
        .chain(&mut p.counters.findings)
        .chain(&mut p.fragmentation.findings)
}

/// As [`findings_mut`], to read.
pub fn findings(p: &Process) -> impl Iterator<Item = &Finding> {
    p.growth
        .findings
        .iter()
        .chain(&p.device.findings)
        .chain(&p.torch.findings)
        .chain(&p.torch.steps.findings)
        .chain(&p.transfers.findings)
        .chain(&p.numa.findings)
        .chain(&p.counters.findings)
        .chain(&p.fragmentation.findings)
}

/// Gives every finding of `report` its severity.
pub fn assign(report: &mut Report) {
    for p in &mut report.processes {
        findings_mut(p).for_each(|f| f.severity = of(f.kind));
    }
    if let Some(r) = &mut report.ranks {
        r.findings.iter_mut().for_each(|f| f.severity = of(f.kind));
    }
}

/// The texts of the "info" findings of every process, each once, in order of first appearance.
pub fn machine_notes(report: &Report) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for f in report.processes.iter().flat_map(findings) {
        if f.severity == "info" && !notes.contains(&f.text) {
            notes.push(f.text.clone());
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_notes_are_said_once_and_findings_all_get_a_severity() {
        let mut r = crate::render::fixture_report();
        for p in &mut r.processes {
            p.numa.findings.push(Finding {
                kind: "one_node",
                text: "one node".into(),
                ..Default::default()
            });
        }
        assign(&mut r);
        let notes = machine_notes(&r);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("this machine has one NUMA node"));
        assert_eq!(notes[1], "one node");
        assert!(r
            .processes
            .iter()
            .flat_map(findings)
            .all(|f| !f.severity.is_empty()));
        assert_eq!(of("out_of_memory"), "high");
        assert_eq!(of("released_growth"), "medium");
        assert_eq!(of("size_churn"), "low");
        assert!(rank("high") < rank("medium") && rank("low") < rank("info"));
    }
}
