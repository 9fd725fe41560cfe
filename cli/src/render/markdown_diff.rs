//! `memshim diff` in Markdown, to paste under a fix: a table per pair of processes, then one of the
//! sites that leak more or less.
use std::io::{self, Write};

use super::changes::{change, site};
use super::markdown::Markdown;
use super::markdown_cells::escape;
use super::Render;
use crate::report::diff::Diff;
use crate::units::thousands;

impl Render<Diff> for Markdown {
    fn render(&self, d: &Diff, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "# memshim diff\n")?;
        for p in &d.processes {
            writeln!(
                out,
                "## `{}` (pid {} -> {})\n",
                escape(&p.program),
                p.pid_before,
                p.pid_after
            )?;
            writeln!(out, "| | before -> after |\n|---|---|")?;
            writeln!(out, "| peak heap | {} |", change(&p.peak_heap))?;
            writeln!(out, "| leaked heap | {} |", change(&p.leaked_heap))?;
            if p.peak_device.before + p.peak_device.after > 0 {
                writeln!(out, "| peak device | {} |", change(&p.peak_device))?;
                writeln!(out, "| leaked device | {} |", change(&p.leaked_device))?;
            }
            writeln!(out)?;
            if p.sites.is_empty() {
                writeln!(out, "No leak site changed.\n")?;
                continue;
            }
            writeln!(
                out,
                "| memory | leaked | blocks | site |\n|---|---|---|---|"
            )?;
            for s in p.sites.iter().take(self.top) {
                writeln!(
                    out,
                    "| {} | {} | {} -> {} | `{}` |",
                    s.memory,
                    change(&s.bytes),
                    thousands(s.count.before),
                    thousands(s.count.after),
                    escape(&site(s))
                )?;
            }
            writeln!(out)?;
        }
        for p in &d.only_before {
            writeln!(out, "- only in the first run: `{}`", escape(p))?;
        }
        for p in &d.only_after {
            writeln!(out, "- only in the second run: `{}`", escape(p))?;
        }
        Ok(())
    }
}
