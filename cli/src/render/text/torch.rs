//! The PyTorch part of the text report: the caching allocator from the inside.
use std::io::{self, Write};

use super::{write_stack, Text, FRAMES_SHOWN};
use crate::report::model::{Process, TorchSection};
use crate::units::human_bytes;

impl Text {
    pub(super) fn torch(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let t = &p.torch;
        match t.state {
            "absent" => return Ok(()),
            "off" => {
                return writeln!(
                    out,
                    "pytorch allocator: {}",
                    t.detail.as_deref().unwrap_or("driver level only")
                )
            }
            _ => {}
        }
        writeln!(
            out,
            "pytorch allocator: {} ({} backend), from the inside",
            t.version.as_deref().unwrap_or("?"),
            t.backend.as_deref().unwrap_or("?")
        )?;
        for d in &t.devices {
            let (allocated, reserved, when) = match (d.exit_allocated_bytes, d.exit_reserved_bytes)
            {
                (Some(a), Some(r)) => (a, r, "at Python's exit"),
                _ => (d.allocated_bytes, d.reserved_bytes, "at the end"),
            };
            writeln!(
                out,
                "  GPU {}: allocated {} {when}, peak {} at {:.2} s; reserved {} {when}, peak {} at {:.2} s; outside the allocator {}",
                d.device,
                human_bytes(allocated),
                human_bytes(d.peak_allocated_bytes),
                d.peak_allocated_time_s,
                human_bytes(reserved),
                human_bytes(d.peak_reserved_bytes),
                d.peak_reserved_time_s,
                human_bytes(d.outside_bytes)
            )?;
            for (i, s) in d.peak_sites.iter().take(self.top.min(3)).enumerate() {
                writeln!(
                    out,
                    "    held at the peak #{}: {} in {} tensors",
                    i + 1,
                    human_bytes(s.bytes),
                    s.count
                )?;
                write_stack(out, &s.frames, FRAMES_SHOWN)?;
            }
        }
        self.held(t, out)?;
        for g in &t.released_growth {
            writeln!(
                out,
                "  released growth on GPU {}: {} at {:.2} s -> {} at {:.2} s, given back at {:.2} s ({} left)",
                g.device,
                human_bytes(g.from_bytes),
                g.from_time_s,
                human_bytes(g.peak_bytes),
                g.peak_time_s,
                g.released_time_s,
                human_bytes(g.live_bytes)
            )?;
            write_stack(out, &g.frames, FRAMES_SHOWN)?;
        }
        for g in &t.growth {
            writeln!(
                out,
                "  growing until the end: {} at {:.2} s -> {} at {:.2} s ({}/s)",
                human_bytes(g.from_bytes),
                g.from_time_s,
                human_bytes(g.to_bytes),
                g.to_time_s,
                human_bytes(g.rate_bytes_per_s as u64)
            )?;
            write_stack(out, &g.frames, FRAMES_SHOWN)?;
        }
        for o in &t.ooms {
            writeln!(
                out,
                "  OOM on GPU {} at {:.2} s: asked for {}; allocated {}, reserved {}, reserved but free {}, largest free block {}",
                o.device,
                o.time_s,
                human_bytes(o.requested_bytes),
                human_bytes(o.allocated_bytes),
                human_bytes(o.reserved_bytes),
                human_bytes(o.cache_free_bytes),
                o.largest_free_bytes.map_or("unknown".to_string(), human_bytes)
            )?;
            writeln!(out, "    verdict: {}", o.text)?;
            if let Some(r) = &o.roles {
                writeln!(out, "    by role: {}", crate::render::roles::roles_line(r))?;
            }
            for (i, h) in o.holders.iter().take(self.top.min(3)).enumerate() {
                writeln!(
                    out,
                    "    held #{}: {} in {} tensors",
                    i + 1,
                    human_bytes(h.bytes),
                    h.count
                )?;
                write_stack(out, &h.frames, FRAMES_SHOWN)?;
            }
        }
        self.torch_steps(t, out)?;
        for f in &t.findings {
            if f.kind == "outside_allocator" {
                writeln!(out, "  {}", f.text)?;
            }
        }
        Ok(())
    }

    fn held(&self, t: &TorchSection, out: &mut dyn Write) -> io::Result<()> {
        let c = &t.held_at_end;
        let when = match t.held_when {
            "python_exit" => format!("when Python began to exit ({:.2} s)", t.held_time_s),
            "detach" => "when memshim detached".to_string(),
            _ => "at the end".to_string(),
        };
        if c.count == 0 {
            return writeln!(out, "  tensors held {when}: none");
        }
        writeln!(
            out,
            "  tensors held {when}: {} in {} tensors from {} sites",
            human_bytes(c.bytes),
            c.count,
            c.sites.len()
        )?;
        for (i, s) in c.sites.iter().take(self.top).enumerate() {
            writeln!(
                out,
                "  #{:<2} {} ({} B) in {} tensors (of {} allocated here)",
                i + 1,
                human_bytes(s.bytes),
                s.bytes,
                s.count,
                s.allocations
            )?;
            write_stack(out, &s.frames, FRAMES_SHOWN)?;
        }
        Ok(())
    }
}
