//! Report filters: only some processes (`--pid`), only sites holding at least so much
//! (`--min-bytes`). Applied to the model, so every format shows the same thing. Class totals stay
//! those of the whole process; only the listed sites shrink.
use super::model::Report;

/// What to keep.
pub struct Filter {
    /// Processes to keep; empty keeps all.
    pub pids: Vec<u32>,
    /// Sites below this many bytes are left out.
    pub min_bytes: u64,
}

/// Applies `f` to `report`.
pub fn apply(report: &mut Report, f: &Filter) {
    if !f.pids.is_empty() {
        report.processes.retain(|p| f.pids.contains(&p.pid));
        report.ranks = super::ranks::section(&report.processes);
    }
    if f.min_bytes == 0 {
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
        p.transfers.sites.retain(|s| s.bytes >= f.min_bytes);
    }
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
            },
        );
        assert_eq!(r.processes.len(), 1);
        let host = &r.processes[0].leaks.host;
        assert_eq!(host.sites.len(), 1);
        assert_eq!(host.sites[0].bytes, 4096);
        assert_eq!(host.bytes, 4396, "totals stay those of the process");
    }
}
