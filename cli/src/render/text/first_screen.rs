//! What the text report says first: the verdict over every process, each process's memory at its
//! peak with the sites that held it, the totals of a job, and the notes about the machine (once).
use std::io::{self, Write};

use crate::report::model::{Process, Report};
use crate::units::human_bytes;

/// Sites listed under a process's peak.
const PEAK_SITES_SHOWN: usize = 3;

/// The verdict: what to act on, most pressing first, or one line saying there is nothing.
pub fn verdict(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    if report.verdict.is_empty() {
        return writeln!(
            out,
            "verdict: nothing to act on (no leak of the program's own, no growth, no device, transfer or placement finding)"
        );
    }
    let n = report.verdict.len();
    writeln!(
        out,
        "verdict: {n} thing{} to act on, most at stake first",
        if n == 1 { "" } else { "s" }
    )?;
    let many = report.processes.len() > 1;
    for (i, v) in report.verdict.iter().enumerate() {
        let bytes = v
            .bytes
            .map(|b| format!("{}  ", human_bytes(b)))
            .unwrap_or_default();
        let who = if many {
            format!("  [{} pid {}]", v.program, v.pid)
        } else {
            String::new()
        };
        writeln!(
            out,
            "  {}. {:<6} {bytes}{}{who}",
            i + 1,
            v.severity.to_uppercase(),
            v.kind.replace('_', " ")
        )?;
        writeln!(out, "     {}", v.text)?;
        if let Some(site) = &v.site {
            if !v.text.contains(site.as_str()) {
                writeln!(out, "     at {site}")?;
            }
        }
        writeln!(out, "     fix: {}", v.fix)?;
    }
    Ok(())
}

/// The program's memory at its peak, with RSS beside, and the heap sites that held the most then.
pub fn peak(p: &Process, out: &mut dyn Write) -> io::Result<()> {
    let m = &p.program_memory;
    let mut parts = vec![format!(
        "heap {} + anonymous mappings {} at {:.3} s",
        human_bytes(m.heap_bytes),
        human_bytes(m.mapped_bytes),
        m.host_time_s
    )];
    if m.device_bytes > 0 {
        parts.push(format!(
            "device {} at {:.3} s",
            human_bytes(m.device_bytes),
            m.device_time_s
        ));
    }
    let rss = m
        .rss_peak_bytes
        .map(|r| format!("; RSS peak {}", human_bytes(r)))
        .unwrap_or_default();
    writeln!(
        out,
        "program memory at its peak: {} ({}){rss}",
        human_bytes(m.bytes),
        parts.join(", ")
    )?;
    let sites = &p.heap.peak_sites;
    if sites.is_empty() {
        return Ok(());
    }
    writeln!(out, "  {}:", super::super::peak_sites_heading(&p.heap))?;
    for s in sites.iter().take(PEAK_SITES_SHOWN) {
        writeln!(
            out,
            "    {:>10} in {:>6} block{}  {}",
            human_bytes(s.bytes),
            s.count,
            if s.count == 1 { " " } else { "s" },
            s.label.as_deref().unwrap_or("an unnamed site")
        )?;
    }
    if sites.len() > PEAK_SITES_SHOWN {
        writeln!(
            out,
            "    ... {} more sites (JSON heap.peak_sites)",
            sites.len() - PEAK_SITES_SHOWN
        )?;
    }
    Ok(())
}

/// The totals line under the overview of several processes.
pub fn totals(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let t = &report.totals;
    writeln!(
        out,
        "total: {} processes, {} allocations; leaked heap {}; program memory at peak: {} in the largest process, {} summed over all",
        t.processes,
        t.allocations,
        human_bytes(t.leaked_host_bytes),
        human_bytes(t.peak_program_bytes),
        human_bytes(t.sum_peak_program_bytes)
    )
}

/// The notes about the machine and the measurement, each once.
pub fn notes(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    if report.notes.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nnotes about this machine:")?;
    for n in &report.notes {
        writeln!(out, "  - {n}")?;
    }
    Ok(())
}
