//! The text of the training steps and of memory by role (see `report::torch_steps`).
use std::io::{self, Write};

use super::Text;
use crate::render::roles::roles_line;
use crate::report::model::TorchSection;
use crate::units::human_bytes;

/// Steps shown before the rest are summed up in one line.
const STEPS_SHOWN: usize = 20;

impl Text {
    pub(super) fn torch_steps(&self, t: &TorchSection, out: &mut dyn Write) -> io::Result<()> {
        for d in &t.devices {
            if let Some(r) = &d.peak_roles {
                writeln!(
                    out,
                    "  by role at the peak (GPU {}): {}",
                    d.device,
                    roles_line(r)
                )?;
            }
        }
        let s = &t.steps;
        if s.steps.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "  steps: {} found by the loop at {}",
            s.steps.len(),
            s.marker_place
        )?;
        writeln!(
            out,
            "    {:>5} {:>9} {:>9} {:>12} {:>12} {:>12} {:>11} {:>11} {:>12}",
            "step",
            "start s",
            "ms",
            "allocated^",
            "reserved^",
            "host heap^",
            "HtoD",
            "DtoH",
            "allocated>"
        )?;
        for st in s.steps.iter().take(STEPS_SHOWN) {
            writeln!(
                out,
                "    {:>5} {:>9.3} {:>9.1} {:>12} {:>12} {:>12} {:>11} {:>11} {:>12}",
                st.index,
                st.start_time_s,
                st.duration_s * 1e3,
                human_bytes(st.peak_allocated_bytes),
                human_bytes(st.peak_reserved_bytes),
                human_bytes(st.peak_host_bytes),
                human_bytes(st.htod_bytes),
                human_bytes(st.dtoh_bytes),
                human_bytes(st.end_allocated_bytes)
            )?;
        }
        if s.steps.len() > STEPS_SHOWN {
            writeln!(out, "    ... {} more steps", s.steps.len() - STEPS_SHOWN)?;
        }
        writeln!(
            out,
            "    (^ the most during the step; > allocated when the next step began)"
        )?;
        let peak_step = s.steps.iter().find(|st| Some(st.index) == s.peak_step);
        if let Some(peak) = peak_step {
            writeln!(
                out,
                "  by role at the peak of step {}: {}",
                peak.index,
                roles_line(&peak.roles_at_peak)
            )?;
        }
        for g in &s.growth {
            writeln!(
                out,
                "  +{} a step at {} since step {} ({} memory: {} by step {})",
                human_bytes(g.bytes_per_step),
                g.place,
                g.since_step,
                g.memory,
                human_bytes(g.bytes),
                g.until_step
            )?;
        }
        Ok(())
    }
}
