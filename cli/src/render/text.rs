//! Text for a terminal: a summary per process, then the top leak sites with their stacks.
use std::io::{self, Write};

use super::{human_bytes, Render};
use crate::report::model::{FrameOut, LeakClass, Process, Report};

/// The text renderer.
pub struct Text {
    /// Sites shown per section.
    pub top: usize,
}

/// Frames shown per site.
const FRAMES_SHOWN: usize = 8;

impl Render for Text {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        for (i, p) in report.processes.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            self.process(p, out)?;
        }
        Ok(())
    }
}

impl Text {
    fn process(&self, p: &Process, out: &mut dyn Write) -> io::Result<()> {
        let cmd = one_line(&if p.argv.is_empty() {
            p.exe.clone()
        } else {
            p.argv.join(" ")
        });
        writeln!(out, "== {cmd}  (pid {}, {:.3} s)", p.pid, p.duration_s)?;
        let mut status = vec![match p.end {
            Some("exit") => "exited normally".to_string(),
            Some("quick_exit") => "exited with _exit".to_string(),
            Some("exec") => "replaced itself with exec".to_string(),
            Some(other) => format!("ended: {other}"),
            None => "TRUNCATED: the trace was not closed (killed or crashed)".to_string(),
        }];
        if p.forked {
            status.push(format!("forked from pid {}", p.ppid));
        }
        if p.dropped_events > 0 {
            status.push(format!("{} events dropped", p.dropped_events));
        }
        writeln!(out, "   {}; trace {}", status.join("; "), p.trace)?;
        for n in &p.notes {
            writeln!(out, "   note: {n}")?;
        }
        let h = &p.heap;
        writeln!(
            out,
            "heap: {} allocations ({}), {} frees, {} temporary; peak {} at {:.3} s",
            h.allocations,
            human_bytes(h.allocated_bytes),
            h.frees,
            h.temporary_allocations,
            human_bytes(h.peak_bytes),
            h.peak_time_s
        )?;
        self.leaks("leaked heap", "blocks", &p.leaks.host, out)?;
        self.leaks(
            "anonymous mappings still mapped",
            "mappings",
            &p.leaks.mmap,
            out,
        )?;
        Ok(())
    }

    fn leaks(&self, title: &str, unit: &str, c: &LeakClass, out: &mut dyn Write) -> io::Result<()> {
        if c.count == 0 {
            writeln!(out, "{title}: none")?;
            return Ok(());
        }
        writeln!(
            out,
            "{title}: {} in {} {unit} from {} sites",
            human_bytes(c.bytes),
            c.count,
            c.sites.len()
        )?;
        for (i, s) in c.sites.iter().take(self.top).enumerate() {
            writeln!(
                out,
                "  #{:<2} {} in {} {unit} (of {} allocated here)",
                i + 1,
                human_bytes(s.bytes),
                s.count,
                s.allocations
            )?;
            for f in s.frames.iter().take(FRAMES_SHOWN) {
                writeln!(out, "        {}", frame_line(f))?;
            }
            if s.frames.len() > FRAMES_SHOWN {
                writeln!(
                    out,
                    "        ... {} more frames",
                    s.frames.len() - FRAMES_SHOWN
                )?;
            }
        }
        if c.sites.len() > self.top {
            writeln!(
                out,
                "  ... {} more sites (--top to see more)",
                c.sites.len() - self.top
            )?;
        }
        Ok(())
    }
}

fn frame_line(f: &FrameOut) -> String {
    let func = f.function.as_deref().unwrap_or("??");
    let module = f
        .module
        .as_deref()
        .map(|m| m.rsplit('/').next().unwrap_or(m))
        .unwrap_or("?");
    match (&f.file, f.line) {
        (Some(file), Some(line)) => {
            let short = file.rsplit('/').next().unwrap_or(file);
            format!("{func}  {short}:{line}")
        }
        _ => format!("{func}  ({module} {})", f.address),
    }
}

/// A command line on one line of at most 100 characters.
fn one_line(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 100 {
        format!("{}...", flat.chars().take(97).collect::<String>())
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn commands_fit_on_one_line() {
        assert_eq!(
            super::one_line("python -c \"\nimport x\n\""),
            "python -c \" import x \""
        );
        assert_eq!(super::one_line(&"a".repeat(150)).chars().count(), 100);
    }
}
