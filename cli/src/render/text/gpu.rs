//! The GPU parts of the text report: the device section (CUDA memory, NVML, unified memory, owners)
//! and the transfers section.
use std::io::{self, Write};

use super::{write_stack, Text};
use crate::report::model::Process;
use crate::units::human_bytes;

impl Text {
    pub(super) fn transfers(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let tr = &p.transfers;
        writeln!(
            out,
            "transfers: {} copies, {}",
            tr.copies,
            human_bytes(tr.bytes)
        )?;
        for r in &tr.summary {
            let sync = match (r.seconds, r.gbps) {
                (Some(s), Some(g)) => format!("sync {:.3} ms at {g:.2} GB/s", s * 1e3),
                (Some(s), None) => format!("sync {:.3} ms", s * 1e3),
                _ => String::new(),
            };
            let asynchronous = if r.async_count > 0 {
                let gpu = match (r.gpu_seconds, r.gpu_gbps) {
                    (Some(s), Some(g)) => format!(
                        ", {} on the GPU {:.3} ms at {g:.2} GB/s",
                        r.gpu_timed_count,
                        s * 1e3
                    ),
                    _ => String::new(),
                };
                format!(
                    "{} async, caller blocked {:.3} ms{gpu}",
                    r.async_count,
                    r.async_blocked_seconds * 1e3
                )
            } else {
                String::new()
            };
            writeln!(
                out,
                "  {:<6} {:<10} {:>7} copies {:>10}  {sync}{}{asynchronous}",
                r.direction,
                r.host_memory,
                r.count,
                human_bytes(r.bytes),
                if sync.is_empty() || asynchronous.is_empty() {
                    ""
                } else {
                    "; "
                }
            )?;
        }
        for (i, s) in tr.sites.iter().take(self.top.min(5)).enumerate() {
            writeln!(
                out,
                "  site #{} {} {}: {} copies, {}",
                i + 1,
                s.direction,
                s.host_memory,
                s.count,
                human_bytes(s.bytes)
            )?;
            write_stack(out, &s.frames, 4)?;
        }
        if tr.failed > 0 {
            writeln!(out, "  {} copies failed", tr.failed)?;
        }
        if !tr.ceilings_measured {
            writeln!(
                out,
                "  (no copy ceilings were measured on this host: run `memshim bench` to compare against them)"
            )?;
        }
        for f in &tr.findings {
            writeln!(out, "  finding: {}", f.text)?;
        }
        Ok(())
    }

    pub(super) fn device(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let d = &p.device;
        writeln!(
            out,
            "device: {} ({}), {}; peak {} at {:.3} s",
            crate::units::blocks(d.allocations, "allocation"),
            human_bytes(d.allocated_bytes),
            crate::units::blocks(d.frees, "free"),
            human_bytes(d.peak_bytes),
            d.peak_time_s
        )?;
        for g in &d.devices {
            let total = g
                .total_bytes
                .map(|t| format!(" of {}", human_bytes(t)))
                .unwrap_or_default();
            writeln!(
                out,
                "  GPU {}: peak {}{total}, {} still allocated",
                g.device,
                human_bytes(g.peak_bytes),
                human_bytes(g.live_bytes)
            )?;
        }
        for g in &d.gpus {
            writeln!(out, "  {}", crate::render::gpu_line(g))?;
        }
        let um = &d.unified_memory;
        match um.cupti {
            "on" => writeln!(
                out,
                "  unified memory (CUPTI, from {:.3} s): {} to the GPU, {} back, {} GPU page-fault groups, {} CPU page faults, {} thrashing",
                um.since_s.unwrap_or(0.0),
                human_bytes(um.htod_bytes),
                human_bytes(um.dtoh_bytes),
                um.gpu_page_faults,
                um.cpu_page_faults,
                um.thrashing
            )?,
            "unavailable" => writeln!(
                out,
                "  unified memory: CUPTI unavailable ({})",
                um.detail.as_deref().unwrap_or("unknown")
            )?,
            _ => {}
        }
        // Only worth a line when someone besides the program allocated GPU memory.
        if d.owners.iter().any(|o| o.owner != "program") {
            let parts: Vec<String> = d
                .owners
                .iter()
                .map(|o| {
                    format!(
                        "{} {} ({} live at the end)",
                        o.owner,
                        human_bytes(o.allocated_bytes),
                        human_bytes(o.live_bytes)
                    )
                })
                .collect();
            writeln!(out, "  GPU memory by owner: {}", parts.join(", "))?;
        }
        for k in &d.kinds {
            writeln!(
                out,
                "  {:<10} {:>6} allocations, {:>10} allocated, {:>10} live in {} blocks",
                k.kind,
                k.allocations,
                human_bytes(k.allocated_bytes),
                human_bytes(k.live_bytes),
                k.live_count
            )?;
        }
        for f in &d.failures {
            let site = f.site.as_deref().unwrap_or("??");
            let retry = if f.retried_after_freeing {
                format!(
                    "; retried after freeing {}",
                    human_bytes(f.freed_before_retry)
                )
            } else {
                String::new()
            };
            writeln!(
                out,
                "  FAILED {} of {} -> {} at {:.3} s with {} held{retry} (in {site})",
                f.api,
                human_bytes(f.size),
                f.error,
                f.time_s,
                human_bytes(f.live_device_bytes),
            )?;
        }
        self.leaks(
            &p.leak_title("device memory"),
            "blocks",
            &p.leaks.device,
            out,
        )?;
        for (title, unit, class) in [
            (p.leak_title("managed memory"), "blocks", &p.leaks.managed),
            (
                p.leak_title("pinned host memory"),
                "blocks",
                &p.leaks.pinned,
            ),
            (
                "host memory still registered".to_string(),
                "ranges",
                &p.leaks.registered,
            ),
        ] {
            if class.count > 0 {
                self.leaks(&title, unit, class, out)?;
            }
        }
        for f in &d.findings {
            writeln!(out, "  finding: {}", f.text)?;
        }
        Ok(())
    }
}
