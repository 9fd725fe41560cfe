//! What the Markdown report says first: the verdict, each process's memory at its peak and what
//! grew (kept or given back); and the notes about the machine, said once at the end.
use std::io::{self, Write};

use super::markdown_cells::{escape, escape_text, site_cell};
use crate::report::model::{Process, Report};
use crate::units::human_bytes;

/// Sites listed under a process's peak.
const PEAK_SITES_SHOWN: usize = 3;

/// The verdict, as a numbered list, or one line saying there is nothing to act on.
pub fn verdict(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "## Verdict\n")?;
    if report.verdict.is_empty() {
        return writeln!(
            out,
            "Nothing to act on: no leak of the program's own, no growth, no device, transfer or placement finding.\n"
        );
    }
    for (i, v) in report.verdict.iter().enumerate() {
        let bytes = v
            .bytes
            .map(|b| format!(" {}", human_bytes(b)))
            .unwrap_or_default();
        writeln!(
            out,
            "{}. **{}**{bytes} {} in `{}` (pid {}): {}  \n   *Fix:* {}",
            i + 1,
            v.severity,
            v.kind.replace('_', " "),
            escape(&v.program),
            v.pid,
            escape_text(&v.text),
            escape_text(&v.fix)
        )?;
    }
    writeln!(out)
}

/// Program memory at its peak, RSS beside, and the heap sites that held the most then.
pub fn peak(p: &Process, out: &mut dyn Write) -> io::Result<()> {
    let m = &p.program_memory;
    let device = if m.device_bytes > 0 {
        format!(
            ", device {} at {:.3} s",
            human_bytes(m.device_bytes),
            m.device_time_s
        )
    } else {
        String::new()
    };
    let rss = m
        .rss_peak_bytes
        .map(|r| format!("; RSS peak {}", human_bytes(r)))
        .unwrap_or_default();
    writeln!(
        out,
        "**Program memory at its peak: {}** (heap {} + anonymous mappings {} at {:.3} s{device}){rss}.\n",
        human_bytes(m.bytes),
        human_bytes(m.heap_bytes),
        human_bytes(m.mapped_bytes),
        m.host_time_s
    )?;
    if p.heap.peak_sites.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "| {} | blocks | site |",
        super::peak_sites_heading(&p.heap)
    )?;
    writeln!(out, "|---|---|---|")?;
    for s in p.heap.peak_sites.iter().take(PEAK_SITES_SHOWN) {
        writeln!(
            out,
            "| {} | {} | {} |",
            human_bytes(s.bytes),
            s.count,
            site_cell(&s.frames)
        )?;
    }
    writeln!(out)
}

/// Sites that kept growing, then growth given back before the end.
pub fn growth(p: &Process, top: usize, out: &mut dyn Write) -> io::Result<()> {
    for (what, list) in [
        ("host heap", &p.growth.host),
        ("anonymous mappings", &p.growth.mappings),
        ("device memory", &p.growth.device),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(out, "### Growing {what}\n")?;
        writeln!(out, "| from | to | rate | held at end | site |")?;
        writeln!(out, "|---|---|---|---|---|")?;
        for g in list.iter().take(top) {
            writeln!(
                out,
                "| {} at {:.2} s | {} at {:.2} s | {}/s | {} | {} |",
                human_bytes(g.from_bytes),
                g.from_time_s,
                human_bytes(g.to_bytes),
                g.to_time_s,
                human_bytes(g.rate_bytes_per_s as u64),
                human_bytes(g.live_bytes),
                site_cell(&g.frames)
            )?;
        }
        writeln!(out)?;
    }
    if p.growth.released.is_empty() {
        return Ok(());
    }
    writeln!(out, "### Growth given back before the end\n")?;
    writeln!(
        out,
        "| memory | from | peak | given back | held at end | site |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    for r in p.growth.released.iter().take(top) {
        writeln!(
            out,
            "| {} | {} at {:.2} s | {} at {:.2} s | at {:.2} s | {} | {} |",
            r.memory,
            human_bytes(r.from_bytes),
            r.from_time_s,
            human_bytes(r.peak_bytes),
            r.peak_time_s,
            r.released_time_s,
            human_bytes(r.live_bytes),
            site_cell(&r.frames)
        )?;
    }
    writeln!(out)
}

/// The notes about the machine and the measurement, each once.
pub fn notes(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    if report.notes.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n**Notes about this machine**\n")?;
    for n in &report.notes {
        writeln!(out, "- {}", escape_text(n))?;
    }
    Ok(())
}
