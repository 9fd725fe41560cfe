//! The overview of a report of several processes: one line each, named by its command, the totals,
//! and the ranks of a distributed job side by side.
use std::io::{self, Write};

use crate::render::{rank_cells, RANK_COLUMNS};
use crate::report::model::{RanksSection, Report};
use crate::units::human_bytes;

/// Width of the command column.
const COMMAND_WIDTH: usize = 28;

/// One line per process, before the details: how a job's processes compare at a glance.
pub fn overview(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>8} {:>8}  {:<COMMAND_WIDTH$} {:>10} {:>11} {:>11} {:>11} {:>12}  role",
        "pid", "parent", "command", "seconds", "peak memory", "peak heap", "leaked", "peak device"
    )?;
    for p in &report.processes {
        let end = match (p.still_writing, p.truncated) {
            (true, _) => " STILL WRITING",
            (false, true) => " TRUNCATED",
            _ => "",
        };
        writeln!(
            out,
            "{:>8} {:>8}  {:<COMMAND_WIDTH$} {:>10.3} {:>11} {:>11} {:>11} {:>12}  {}{end}",
            p.pid,
            p.ppid,
            p.command.chars().take(COMMAND_WIDTH).collect::<String>(),
            p.duration_s,
            human_bytes(p.program_memory.bytes),
            human_bytes(p.heap.peak_bytes),
            human_bytes(p.leaks.host.program_bytes),
            human_bytes(p.device.peak_bytes),
            p.role
        )?;
    }
    super::first_screen::totals(report, out)?;
    if let Some(r) = &report.ranks {
        ranks(r, out)?;
    }
    Ok(())
}

/// The ranks of a distributed job side by side.
fn ranks(r: &RanksSection, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "\nranks:")?;
    let line = |cells: &[String]| {
        let mut l = format!("  {:<16}", cells[0].chars().take(16).collect::<String>());
        for c in &cells[1..] {
            l.push_str(&format!(" {c:>13}"));
        }
        l
    };
    let head: Vec<String> = RANK_COLUMNS.iter().map(|c| c.to_string()).collect();
    writeln!(out, "{}", line(&head))?;
    for row in &r.rows {
        writeln!(out, "{}", line(&rank_cells(row)))?;
    }
    for f in &r.findings {
        writeln!(out, "  finding: {}", f.text)?;
    }
    Ok(())
}
