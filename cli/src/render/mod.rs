//! Renderers: one file per output format, all drawing from the same [`Report`] (and `diff`'s from
//! the same `report::diff::Diff`). No analysis here.
pub mod changes;
pub mod colour;
pub mod html;
pub mod json;
mod json_layout;
pub mod markdown;
mod markdown_cells;
mod markdown_diff;
mod markdown_first;
mod markdown_torch;
pub mod numa_lines;
pub mod roles;
mod set_apart;
pub mod text;
pub mod wrap;

use std::io::{self, Write};

use crate::report::model::{FrameOut, Report};
use crate::units::human_bytes;

/// An output format of a model: a report (the default), or the `diff` of two.
pub trait Render<M = Report> {
    /// Writes `model` to `out`.
    fn render(&self, model: &M, out: &mut dyn Write) -> io::Result<()>;
}

/// One line about the process's Python interpreter, if it ran one.
pub fn python_line(p: &crate::report::model::Process) -> Option<String> {
    let py = p.python.as_ref()?;
    Some(match &py.reason {
        None => format!("CPython {}: stacks show Python frames", py.version),
        Some(why) => format!(
            "CPython {}: stacks show native frames only ({why})",
            py.version
        ),
    })
}

/// The ranks table's column headings and one row's cells, shared by the text and Markdown reports.
pub const RANK_COLUMNS: [&str; 10] = [
    "host",
    "rank",
    "pid",
    "peak device",
    "leaked device",
    "leaked host",
    "growing sites",
    "HtoD",
    "DtoH",
    "DtoD",
];

/// One rank's cells, in [`RANK_COLUMNS`] order.
pub fn rank_cells(row: &crate::report::model::RankRow) -> [String; 10] {
    [
        row.host.clone(),
        row.rank.to_string(),
        row.pid.to_string(),
        human_bytes(row.peak_device_bytes),
        human_bytes(row.leaked_device_bytes),
        human_bytes(row.leaked_host_bytes),
        row.growing_sites.to_string(),
        human_bytes(row.htod_bytes),
        human_bytes(row.dtoh_bytes),
        human_bytes(row.dtod_bytes),
    ]
}

/// One GPU as NVML saw it, in one line.
/// The host heap's totals in one line, as the text and Markdown reports give them.
pub fn heap_line(h: &crate::report::model::HeapSummary) -> String {
    use crate::units::{blocks, thousands};
    format!(
        "{} ({}), {}, {} temporary; peak {} at {:.3} s",
        blocks(h.allocations, "allocation"),
        human_bytes(h.allocated_bytes),
        blocks(h.frees, "free"),
        thousands(h.temporary_allocations),
        human_bytes(h.peak_bytes),
        h.peak_time_s
    )
}

/// What the sites listed under the peak held, and when, as the text and Markdown reports head them:
/// the heap's peak, or under thin sampling the sampled blocks' own peak when a reading of the
/// counts was higher (the sites held at that reading are not known).
pub fn peak_sites_heading(h: &crate::report::model::HeapSummary) -> String {
    if h.peak_sites_elsewhere() {
        format!(
            "sampled blocks at their own peak ({} at {:.3} s)",
            human_bytes(h.peak_sites_bytes),
            h.peak_sites_time_s
        )
    } else {
        format!(
            "held at the heap's peak ({} at {:.3} s)",
            human_bytes(h.peak_bytes),
            h.peak_time_s
        )
    }
}

pub fn gpu_line(g: &crate::report::model::GpuOut) -> String {
    let process = g
        .peak_process_bytes
        .map(|b| {
            format!(
                "the driver counted up to {} for this process; ",
                human_bytes(b)
            )
        })
        .unwrap_or_default();
    let node = if g.numa_node >= 0 {
        format!(", NUMA node {}", g.numa_node)
    } else {
        String::new()
    };
    let util = match (g.mean_gpu_util, g.mean_memory_util) {
        (Some(gpu), Some(mem)) => {
            format!("; kernels ran {gpu:.0}% of the time, memory busy {mem:.0}%")
        }
        _ => String::new(),
    };
    format!(
        "NVML GPU {} {} ({}): PCIe gen{} x{}{node}; {process}all processes used up to {} of {}{util}",
        g.index,
        g.name,
        g.uuid,
        g.pcie_generation,
        g.pcie_width,
        human_bytes(g.peak_used_bytes),
        human_bytes(g.total_bytes)
    )
}

/// How a site's stack is shown: for a stack with Python frames, those frames (the lines a user acts
/// on, innermost first), then the native frames above the innermost of them (what that line called
/// into, innermost first); for a native stack, its frames and nothing else.
pub fn site_view(frames: &[FrameOut]) -> (Vec<&FrameOut>, Vec<&FrameOut>) {
    let python: Vec<&FrameOut> = frames.iter().filter(|f| f.kind == "python").collect();
    if python.is_empty() {
        return (frames.iter().collect(), Vec::new());
    }
    let native = frames.iter().take_while(|f| f.kind != "python").collect();
    (python, native)
}

/// A command line for a heading: control characters and runs of whitespace become one space, and
/// anything past 100 characters is cut, so a `python -c` script cannot break the layout.
pub fn one_line(s: &str) -> String {
    let flat = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() > 100 {
        format!("{}...", flat.chars().take(97).collect::<String>())
    } else {
        flat
    }
}

#[cfg(test)]
pub(crate) mod fixture;

/// The fixture report of the renderers' tests, for other modules' tests.
#[cfg(test)]
pub fn fixture_report() -> crate::report::model::Report {
    fixture::report()
}

/// The fixture report with its first process's device leaks gone, for comparing against.
#[cfg(test)]
pub fn fixture_report_without_device() -> crate::report::model::Report {
    let mut r = fixture::report();
    r.processes[0].leaks.device = Default::default();
    r
}

#[cfg(test)]
mod tests {
    use super::Render;

    #[test]
    fn commands_fit_on_one_line() {
        assert_eq!(
            super::one_line("python -c \"\nimport x\n\""),
            "python -c \" import x \""
        );
        assert_eq!(super::one_line(&"a".repeat(150)).chars().count(), 100);
    }

    /// Compares a renderer's output for the fixture report with its committed snapshot;
    /// `UPDATE_SNAPSHOTS=1 cargo test` rewrites the snapshots after an intended change.
    fn snapshot(name: &str, renderer: &dyn Render) {
        let mut out = Vec::new();
        renderer
            .render(&super::fixture::report(), &mut out)
            .unwrap();
        let got = String::from_utf8(out).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/render/snapshots")
            .join(name);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_SNAPSHOTS=1", path.display()));
        assert_eq!(
            got, want,
            "{} changed; if that is intended, run with UPDATE_SNAPSHOTS=1",
            name
        );
    }

    #[test]
    fn text_snapshot() {
        snapshot("fixture.txt", &super::text::Text { top: 10 });
    }

    #[test]
    fn markdown_snapshot() {
        snapshot("fixture.md", &super::markdown::Markdown::new(10));
    }

    #[test]
    fn a_cut_list_says_how_much_it_shows() {
        let growing = || {
            let mut r = super::fixture::report();
            let p = r.processes.iter_mut().find(|p| !p.growth.host.is_empty());
            p.expect("the fixture has a growing site")
                .growth
                .host
                .remove(0)
        };
        let mut report = super::fixture::report();
        let p = report
            .processes
            .iter_mut()
            .find(|p| !p.growth.host.is_empty())
            .expect("the fixture has a growing site");
        p.growth.host = (0..12).map(|_| growing()).collect();
        let mut out = Vec::new();
        super::text::Text { top: 3 }
            .render(&report, &mut out)
            .expect("rendered");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(
            text.contains("  showing 3 of 12 sites (--top to see more)\n"),
            "{text}"
        );
    }
}
