//! The PyTorch section in Markdown: what a bug report needs of the allocator layer (per GPU
//! allocated and reserved, the tensors held by line, given-back growth, each OOM with its verdict).
use std::io::{self, Write};

use super::markdown_cells::site_cell;
use crate::report::model::Process;
use crate::units::human_bytes;

/// Writes the section; nothing when the process never used PyTorch's CUDA allocator.
pub fn torch(p: &Process, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let t = &p.torch;
    match t.state {
        "absent" => return Ok(()),
        "off" => {
            return writeln!(
                out,
                "### PyTorch allocator\n\n{}.\n",
                t.detail.as_deref().unwrap_or("driver level only")
            )
        }
        _ => {}
    }
    writeln!(
        out,
        "### PyTorch allocator\n\nPyTorch {} ({} backend), seen from the inside.\n",
        t.version.as_deref().unwrap_or("?"),
        t.backend.as_deref().unwrap_or("?")
    )?;
    writeln!(
        out,
        "| GPU | allocated at end | peak allocated | reserved at end | peak reserved | outside the allocator |\n|---|---|---|---|---|---|"
    )?;
    for d in &t.devices {
        writeln!(
            out,
            "| {} | {} | {} at {:.2} s | {} | {} at {:.2} s | {} |",
            d.device,
            human_bytes(d.exit_allocated_bytes.unwrap_or(d.allocated_bytes)),
            human_bytes(d.peak_allocated_bytes),
            d.peak_allocated_time_s,
            human_bytes(d.exit_reserved_bytes.unwrap_or(d.reserved_bytes)),
            human_bytes(d.peak_reserved_bytes),
            d.peak_reserved_time_s,
            human_bytes(d.outside_bytes)
        )?;
    }
    writeln!(out)?;
    let c = &t.held_at_end;
    if c.count > 0 {
        writeln!(
            out,
            "**Tensors held at the end**: {} in {} tensors.\n\n| bytes | tensors | site |\n|---|---|---|",
            human_bytes(c.bytes),
            c.count
        )?;
        for s in c.sites.iter().take(top) {
            writeln!(
                out,
                "| {} ({} B) | {} | {} |",
                human_bytes(s.bytes),
                s.bytes,
                s.count,
                site_cell(&s.frames)
            )?;
        }
        writeln!(out)?;
    }
    for g in &t.released_growth {
        writeln!(
            out,
            "- Growth given back: {} → {} ({:.2} s → {:.2} s), released at {:.2} s: {}",
            human_bytes(g.from_bytes),
            human_bytes(g.peak_bytes),
            g.from_time_s,
            g.peak_time_s,
            g.released_time_s,
            site_cell(&g.frames)
        )?;
    }
    for o in &t.ooms {
        let holder = o
            .holders
            .first()
            .map(|h| {
                format!(
                    " Most held by {}: {}.",
                    site_cell(&h.frames),
                    human_bytes(h.bytes)
                )
            })
            .unwrap_or_default();
        writeln!(
            out,
            "- **Out of memory** on GPU {} at {:.2} s asking for {}: {}.{holder}",
            o.device,
            o.time_s,
            human_bytes(o.requested_bytes),
            o.text
        )?;
    }
    for f in &t.steps.findings {
        writeln!(out, "- {}", f.text)?;
    }
    for d in &t.devices {
        if let Some(r) = &d.peak_roles {
            let line = crate::render::roles::roles_line(r);
            writeln!(out, "- By role at GPU {}'s peak: {line}", d.device)?;
        }
    }
    if !t.released_growth.is_empty() || !t.ooms.is_empty() || !t.devices.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}
