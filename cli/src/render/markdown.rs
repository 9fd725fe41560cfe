//! Markdown, to paste into a bug report: an overview table, then per process a summary with the top
//! findings and one section per analysis, the top sites in tables and the rest folded in `<details>`.
//! Kept short on purpose: at most `top` sites shown per table, at most `FOLDED` more folded, and the
//! whole within `BUDGET` (fewer sites, then a cut at a process boundary, when it would be longer).
use std::io::{self, Write};

use super::markdown_cells::{escape, escape_text, site_cell};
use super::{python_line, rank_cells, Render, RANK_COLUMNS};
use crate::report::model::{LeakClass, Process, Report, Site};
use crate::units::human_bytes;

/// Sites folded under a table by default.
const FOLDED: usize = 40;
/// The most a report may take: a GitHub comment holds 65,536 characters.
const BUDGET: usize = 60_000;

/// The Markdown renderer.
pub struct Markdown {
    /// Sites shown per table.
    pub(super) top: usize,
    /// Sites folded under a table, past which only a count is given.
    folded: usize,
}

impl Markdown {
    /// A renderer showing `top` sites per table.
    pub fn new(top: usize) -> Markdown {
        Markdown {
            top,
            folded: FOLDED,
        }
    }
}

impl Render for Markdown {
    /// Renders within [`BUDGET`]: with fewer sites per table when the report would be longer, and cut
    /// at a process boundary (saying so) when even that is too long.
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        let passes = [
            (self.top, self.folded),
            (self.top.min(5), self.folded.min(5)),
            (self.top.min(3), 0),
        ];
        let mut text = Vec::new();
        for (top, folded) in passes {
            text.clear();
            Markdown { top, folded }.render_all(report, &mut text)?;
            if text.len() <= BUDGET {
                return out.write_all(&text);
            }
        }
        let text = String::from_utf8_lossy(&text);
        let mut cut = BUDGET - 400;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let cut = text[..cut].rfind("\n## ").unwrap_or(cut);
        out.write_all(text[..cut].as_bytes())?;
        writeln!(
            out,
            "\n\n_The report was cut here to stay under {} KB; `memshim report --format json` has every process and site._",
            BUDGET / 1000
        )?;
        writeln!(out, "\n<sub>memshim report, schema {}</sub>", report.schema)
    }
}

impl Markdown {
    /// Heap fragmentation, counters and NUMA, a line each.
    fn system(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let fr = &p.fragmentation;
        let measured: Vec<String> = p
            .counters
            .values
            .iter()
            .filter_map(|c| c.value.map(|v| format!("{} {v}", c.name)))
            .collect();
        if fr.samples == 0 && measured.is_empty() && p.numa.nodes.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "### System
"
        )?;
        if fr.samples > 0 {
            writeln!(
                out,
                "- heap fragmentation: the allocator held up to {} free ({:.1}% of its arena) at {:.3} s; resident peak {}",
                human_bytes(fr.peak_free_held_bytes),
                fr.peak_free_held_ratio * 100.0,
                fr.peak_free_held_time_s,
                human_bytes(fr.peak_rss_bytes)
            )?;
        }
        if !measured.is_empty() {
            writeln!(out, "- counters: {}", measured.join(", "))?;
        }
        if !p.numa.nodes.is_empty() {
            writeln!(
                out,
                "- NUMA: {} node(s); {} large blocks sampled, {} remote; {} placement and affinity calls",
                p.numa.nodes.len(),
                p.numa.placements.len(),
                p.numa.remote_blocks,
                p.numa.calls.len()
            )?;
        }
        writeln!(out)
    }

    fn render_all(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "# memshim report\n")?;
        super::markdown_first::verdict(report, out)?;
        writeln!(
            out,
            "| process | pid | role | duration | end | peak memory | peak heap | leaked heap | peak device | leaked device |"
        )?;
        writeln!(out, "|---|---|---|---|---|---|---|---|---|---|")?;
        for p in &report.processes {
            writeln!(
                out,
                "| `{}` | {} | {} | {:.3} s | {} | {} | {} | {} | {} | {} |",
                escape(&p.command),
                p.pid,
                p.role,
                p.duration_s,
                p.end.unwrap_or(if p.still_writing {
                    "*still being written*"
                } else {
                    "**truncated**"
                }),
                human_bytes(p.program_memory.bytes),
                human_bytes(p.heap.peak_bytes),
                human_bytes(p.leaks.host.program_bytes),
                human_bytes(p.device.peak_bytes),
                human_bytes(p.leaks.device.bytes)
            )?;
        }
        if let Some(r) = &report.ranks {
            writeln!(out, "\n**Ranks**\n")?;
            writeln!(out, "| {} |", RANK_COLUMNS.join(" | "))?;
            writeln!(out, "|{}", "---|".repeat(RANK_COLUMNS.len()))?;
            for row in &r.rows {
                let cells = rank_cells(row).map(|c| escape(&c));
                writeln!(out, "| {} |", cells.join(" | "))?;
            }
            for f in &r.findings {
                writeln!(out, "\n- {}", escape_text(&f.text))?;
            }
        }
        if !report.unreadable.is_empty() {
            writeln!(out, "\n**Traces not read**\n")?;
            for u in &report.unreadable {
                let trace = escape(&super::one_line(&u.trace));
                writeln!(
                    out,
                    "- `{trace}`: {}",
                    escape_text(&super::one_line(&u.why))
                )?;
            }
        }
        for p in &report.processes {
            self.process(p, out)?;
        }
        super::markdown_first::notes(report, out)?;
        writeln!(out, "\n<sub>memshim report, schema {}</sub>", report.schema)
    }
}

impl Markdown {
    fn process(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "\n## `{}` (pid {})\n",
            escape(&super::one_line(&p.argv.join(" "))),
            p.pid
        )?;
        let mut facts = vec![format!("ran {:.3} s", p.duration_s)];
        facts.push(match p.end {
            Some(e) => format!("ended by {e}"),
            None if p.still_writing => {
                "*trace still being written* (the process is running)".into()
            }
            None => "**trace truncated** (killed or crashed)".into(),
        });
        if p.forked {
            facts.push(format!("fork child of {}", p.ppid));
        }
        if p.dropped_events > 0 {
            facts.push(format!("{} events dropped", p.dropped_events));
        }
        if let Some(b) = p.sampling_bytes {
            facts.push(format!("host stacks sampled every ~{}", human_bytes(b)));
        }
        if let Some(line) = python_line(p) {
            facts.push(line);
        }
        writeln!(out, "{}.\n", facts.join(", "))?;
        super::markdown_first::peak(p, out)?;
        super::markdown_first::growth(p, self.top, out)?;
        let findings: Vec<&str> = p
            .device
            .findings
            .iter()
            .chain(&p.transfers.findings)
            .chain(&p.growth.findings)
            .chain(&p.fragmentation.findings)
            .chain(&p.counters.findings)
            .chain(&p.numa.findings)
            // What the machine could not measure, or a one-node machine, is context, not a finding:
            // said once, at the end of the report.
            .filter(|f| f.severity != "info")
            .map(|f| f.text.as_str())
            .collect();
        if !findings.is_empty() {
            writeln!(out, "**Findings**\n")?;
            for f in findings {
                writeln!(out, "- {}", escape_text(f))?;
            }
            writeln!(out)?;
        }
        let h = &p.heap;
        writeln!(out, "### Host heap\n")?;
        writeln!(out, "{}.\n", super::heap_line(h))?;
        if let Some(n) = h.totals_note {
            writeln!(out, "{n}\n")?;
        }
        self.leaks(&title_case(&p.leak_title("heap")), &p.leaks.host, out)?;
        self.leaks("Anonymous mappings still mapped", &p.leaks.mmap, out)?;
        if p.device.seen {
            let d = &p.device;
            writeln!(out, "### Device memory\n")?;
            writeln!(
                out,
                "{} ({}), {}; peak {} at {:.3} s; {}.\n",
                crate::units::blocks(d.allocations, "allocation"),
                human_bytes(d.allocated_bytes),
                crate::units::blocks(d.frees, "free"),
                human_bytes(d.peak_bytes),
                d.peak_time_s,
                crate::units::blocks(d.failures.len() as u64, "failed call")
            )?;
            for g in &d.gpus {
                writeln!(out, "- {}", super::gpu_line(g))?;
            }
            if !d.gpus.is_empty() {
                writeln!(out)?;
            }
            for (memory, class) in [
                ("device memory", &p.leaks.device),
                ("managed memory", &p.leaks.managed),
                ("pinned host memory", &p.leaks.pinned),
            ] {
                self.leaks(&title_case(&p.leak_title(memory)), class, out)?;
            }
        }
        super::markdown_torch::torch(p, self.top, out)?;
        if !p.transfers.summary.is_empty() {
            writeln!(out, "### Transfers\n")?;
            writeln!(
                out,
                "| direction | host memory | copies | bytes | sync GB/s | async blocked | async GPU GB/s |"
            )?;
            writeln!(out, "|---|---|---|---|---|---|---|")?;
            for r in &p.transfers.summary {
                writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {:.3} ms | {} |",
                    r.direction,
                    r.host_memory,
                    r.count,
                    human_bytes(r.bytes),
                    r.gbps.map_or("–".into(), |g| format!("{g:.2}")),
                    r.async_blocked_seconds * 1e3,
                    r.gpu_gbps.map_or("–".into(), |g| format!(
                        "{g:.2} ({} timed)",
                        r.gpu_timed_count
                    ))
                )?;
            }
            writeln!(out)?;
        }
        self.system(p, out)?;
        if !p.notes.is_empty() {
            writeln!(out, "<details><summary>Notes</summary>\n")?;
            for n in &p.notes {
                writeln!(out, "- {}", escape_text(n))?;
            }
            writeln!(out, "\n</details>")?;
        }
        Ok(())
    }

    fn leaks(&self, title: &str, c: &LeakClass, out: &mut dyn Write) -> io::Result<()> {
        use crate::units::blocks;
        let own: Vec<&Site> = c.sites_of_program().collect();
        if own.is_empty() && c.program_count == 0 && c.sites.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "**{title}**: {} in {} from {}{}.\n",
            human_bytes(c.program_bytes),
            blocks(c.program_count, "block"),
            blocks(c.program_sites, "site"),
            if c.driver_count > 0 {
                format!(
                    " (plus {} the CUDA driver keeps for itself)",
                    human_bytes(c.driver_bytes)
                )
            } else {
                String::new()
            }
        )?;
        let apart: Vec<String> = super::set_apart::by_design_lines(c, "block")
            .into_iter()
            .chain(super::set_apart::suppressed_lines(c, "block"))
            .collect();
        for line in &apart {
            writeln!(out, "- not the program's: {}", escape(line))?;
        }
        if !apart.is_empty() {
            writeln!(out)?;
        }
        if own.is_empty() {
            return Ok(());
        }
        let row = |s: &Site| {
            format!(
                "| {} | {} | {}{} |",
                human_bytes(s.estimated.as_ref().map_or(s.bytes, |e| e.bytes)),
                s.count,
                if s.owner == "nccl" { "NCCL: " } else { "" },
                site_cell(&s.frames)
            )
        };
        writeln!(out, "| bytes | blocks | site |\n|---|---|---|")?;
        for s in own.iter().take(self.top) {
            writeln!(out, "{}", row(s))?;
        }
        writeln!(out)?;
        let rest = &own[self.top.min(own.len())..];
        if !rest.is_empty() {
            writeln!(
                out,
                "<details><summary>{} more sites</summary>\n",
                rest.len()
            )?;
            writeln!(out, "| bytes | blocks | site |\n|---|---|---|")?;
            for s in rest.iter().take(self.folded) {
                writeln!(out, "{}", row(s))?;
            }
            if rest.len() > self.folded {
                writeln!(
                    out,
                    "\n{} more sites not shown; see the JSON report.",
                    rest.len() - self.folded
                )?;
            }
            writeln!(out, "\n</details>\n")?;
        }
        Ok(())
    }
}

/// A heading's first letter in capitals.
fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(report: &Report) -> String {
        let mut out = Vec::new();
        Markdown::new(10).render(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_big_job_stays_within_the_budget_and_says_where_it_was_cut() {
        let small = crate::render::fixture_report();
        assert!(
            !rendered(&small).contains("was cut here"),
            "a small report is whole"
        );
        let mut report = crate::render::fixture_report();
        report.processes.clear();
        for k in 0..60 {
            let mut p = crate::render::fixture_report().processes.remove(0);
            p.pid = 1000 + k;
            let frames = p.leaks.host.sites[0].frames.clone();
            for i in 0..400 {
                let mut f = frames.clone();
                f[0].function = Some(format!("allocate_{i}").into());
                p.leaks.host.sites.push(crate::report::model::Site {
                    owner: "program",
                    suppressed_by: None,
                    bytes: 1000 + i,
                    count: 1,
                    allocations: 1,
                    allocated_bytes: 1000 + i,
                    label: None,
                    estimated: None,
                    frames: f,
                });
            }
            report.processes.push(p);
        }
        let text = rendered(&report);
        assert!(text.len() <= BUDGET, "{} bytes", text.len());
        assert!(text.contains("was cut here"), "the cut is said");
        assert!(text.ends_with("</sub>\n"));
    }
}
