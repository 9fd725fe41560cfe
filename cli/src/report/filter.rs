//! Report filters: only some processes (`--pid`, `--program`), not others (`--exclude`), only
//! sites holding at least so much (`--min-bytes`). Applied to the model, so every format shows the same thing. Class totals stay
//! those of the whole process; only the listed sites shrink.
use super::model::Report;

/// What to keep.
#[derive(Default)]
pub struct Filter {
    /// Processes to keep; empty keeps all.
    pub pids: Vec<u32>,
    /// Programs to keep (see `command::matches`); empty keeps all.
    pub programs: Vec<String>,
    /// Programs to leave out.
    pub excludes: Vec<String>,
    /// Sites below this many bytes are left out.
    pub min_bytes: u64,
}

/// Applies `f` to `report`.
pub fn apply(report: &mut Report, f: &Filter) {
    let named = |names: &[String], p: &super::model::Process| {
        names
            .iter()
            .any(|n| super::command::matches(n, &p.exe, &p.argv, &p.command))
    };
    if !f.pids.is_empty() || !f.programs.is_empty() || !f.excludes.is_empty() {
        report.processes.retain(|p| {
            (f.pids.is_empty() || f.pids.contains(&p.pid))
                && (f.programs.is_empty() || named(&f.programs, p))
                && !named(&f.excludes, p)
        });
        report.ranks = super::ranks::section(&report.processes);
    }
    // The figures, the verdict and the totals are of what is shown.
    let refill = |report: &mut Report| {
        super::figures::fill(report);
        super::verdict::fill(report);
    };
    if f.min_bytes == 0 {
        refill(report);
        return;
    }
    for p in &mut report.processes {
        for c in [
            &mut p.leaks.host,
            &mut p.leaks.mmap,
            &mut p.leaks.device,
            &mut p.leaks.managed,
            &mut p.leaks.pinned,
            &mut p.leaks.registered,
        ] {
            c.sites.retain(|s| s.bytes >= f.min_bytes);
        }
        p.growth.host.retain(|g| g.live_bytes >= f.min_bytes);
        p.growth.device.retain(|g| g.live_bytes >= f.min_bytes);
        p.growth.mappings.retain(|g| g.live_bytes >= f.min_bytes);
        p.growth.released.retain(|g| g.peak_bytes >= f.min_bytes);
        p.heap.peak_sites.retain(|s| s.bytes >= f.min_bytes);
        p.transfers.sites.retain(|s| s.bytes >= f.min_bytes);
    }
    refill(report);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_pids_and_the_big_sites() {
        let mut r = crate::render::fixture_report();
        apply(
            &mut r,
            &Filter {
                pids: vec![100],
                min_bytes: 1000,
                ..Filter::default()
            },
        );
        assert_eq!(r.processes.len(), 1);
        let host = &r.processes[0].leaks.host;
        assert_eq!(host.sites.len(), 1);
        assert_eq!(host.sites[0].bytes, 4096);
        assert_eq!(host.bytes, 4396, "totals stay those of the process");
    }

    #[test]
    fn programs_are_kept_and_excluded_by_name_and_the_verdict_follows() {
        let mut r = crate::render::fixture_report();
        let excl = |names: &[&str]| Filter {
            excludes: names.iter().map(|s| s.to_string()).collect(),
            ..Filter::default()
        };
        apply(&mut r, &excl(&["nothing"]));
        assert_eq!(r.processes.len(), 2);
        let worker = |r: &mut Report| {
            let w = &mut r.processes[1];
            w.exe = "/app/loader".into();
            w.argv = vec!["loader".into(), "shard-3".into()];
            w.command = crate::report::command::name(&w.exe, &w.argv);
        };
        let mut excluded = crate::render::fixture_report();
        worker(&mut excluded);
        apply(&mut excluded, &excl(&["loader shard-3"]));
        assert_eq!(excluded.processes.len(), 1);
        assert_eq!(excluded.processes[0].pid, 100);
        let mut only = crate::render::fixture_report();
        worker(&mut only);
        apply(
            &mut only,
            &Filter {
                programs: vec!["train".into(), "loader".into()],
                excludes: vec!["shard-3".into()],
                ..Filter::default()
            },
        );
        let pids: Vec<u32> = only.processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![100]);
        assert!(
            only.verdict.iter().all(|v| v.pid == 100),
            "{:?}",
            only.verdict
        );
        assert_eq!(only.totals.processes, 1);
    }
}
