//! `memshim diff` for a terminal: per pair of processes, the changed peaks and leaks, then the sites
//! that leak more or less and the transfers that changed.
use std::io::{self, Write};

use super::Text;
use crate::render::changes::{change, site};
use crate::render::Render;
use crate::report::diff::Diff;
use crate::units::{blocks, thousands};

impl Render<Diff> for Text {
    fn render(&self, d: &Diff, out: &mut dyn Write) -> io::Result<()> {
        for p in &d.processes {
            writeln!(
                out,
                "== {} (pid {} -> {})",
                p.program, p.pid_before, p.pid_after
            )?;
            writeln!(out, "peak heap:     {}", change(&p.peak_heap))?;
            writeln!(out, "leaked heap:   {}", change(&p.leaked_heap))?;
            if p.peak_device.before + p.peak_device.after > 0 {
                writeln!(out, "peak device:   {}", change(&p.peak_device))?;
                writeln!(out, "leaked device: {}", change(&p.leaked_device))?;
            }
            if p.sites.is_empty() {
                writeln!(out, "no leak site changed")?;
            }
            for s in p.sites.iter().take(self.top) {
                writeln!(
                    out,
                    "  {} {} in {} -> {}  {}",
                    s.memory,
                    change(&s.bytes),
                    thousands(s.count.before),
                    blocks(s.count.after, "block"),
                    site(s)
                )?;
            }
            for t in p.transfers.iter().filter(|t| t.bytes.delta != 0) {
                writeln!(out, "  transfers {}: {}", t.kind, change(&t.bytes))?;
            }
        }
        for p in &d.only_before {
            writeln!(out, "only in the first run: {p}")?;
        }
        for p in &d.only_after {
            writeln!(out, "only in the second run: {p}")?;
        }
        Ok(())
    }
}
