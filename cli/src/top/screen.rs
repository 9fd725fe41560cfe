//! Draws one screen of `memshim top` from a [`Live`]: program memory now and at its peak, each GPU,
//! the sites holding the most, growth, copies. The sites fill whatever height is left.
//!
//! Only draws: the figures come worked out (see `live`), and the terminal is `terminal`'s.
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::live::{Live, Memory};
use crate::units::{human_bytes, thousands};

/// Notes shown at most (the report has them all).
const NOTES: usize = 3;

/// Draws `live` (none before the first replay) with `status` (when it was read, or why it could
/// not be) on the last line.
pub fn draw(frame: &mut Frame, live: Option<&Live>, status: &str) {
    let area = frame.area();
    let mut lines = match live {
        Some(live) => body(
            live,
            area.height.saturating_sub(1) as usize,
            area.width as usize,
        ),
        None => vec![Line::from("reading the trace...")],
    };
    lines.truncate(area.height.saturating_sub(1) as usize);
    frame.render_widget(Paragraph::new(lines), area);
    let last = Rect {
        y: area.y + area.height.saturating_sub(1),
        height: area.height.min(1),
        ..area
    };
    let footer = Line::from(vec![
        Span::styled("q", Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(format!(" quits; the program goes on.  {status}")),
    ]);
    frame.render_widget(Paragraph::new(footer), last);
}

fn bold(s: impl Into<String>) -> Line<'static> {
    Line::from(Span::styled(
        s.into(),
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// The lines of the screen, `width` wide, the sites cut so that all of it fits in `height`.
fn body(live: &Live, height: usize, width: usize) -> Vec<Line<'static>> {
    let mut top = vec![
        bold(format!("memshim top: {}", live.title)),
        Line::from(format!("{}; trace {}", live.state, live.trace)),
        Line::from(""),
        bold(format!(
            "{:<16}{:>22}  {:>14}",
            "program memory", "now", "peak"
        )),
    ];
    top.extend(memory_rows(&live.now, &live.peak));
    if !live.gpus.is_empty() {
        top.push(Line::from(""));
        top.push(bold(format!(
            "{:<8}{:>14}  {:>14}  {:>18}  {:>14}",
            "GPU", "device live", "device peak", "tensors allocated", "reserved"
        )));
        for g in &live.gpus {
            let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), human_bytes);
            top.push(Line::from(format!(
                "  {:<6}{:>14}  {:>14}  {:>18}  {:>14}",
                g.device,
                human_bytes(g.live),
                human_bytes(g.peak),
                opt(g.allocated),
                opt(g.reserved)
            )));
        }
    }
    let mut bottom = Vec::new();
    if !live.growth.is_empty() {
        bottom.push(Line::from(""));
        bottom.push(bold("growth"));
        bottom.extend(live.growth.iter().map(|g| Line::from(format!("  {g}"))));
    }
    if !live.copies.is_empty() {
        bottom.push(Line::from(""));
        bottom.push(bold(format!(
            "{:<22}{:>10}  {:>12}  {:>10}",
            "copies", "count", "bytes", "GB/s"
        )));
        for c in &live.copies {
            bottom.push(Line::from(format!(
                "  {:<20}{:>10}  {:>12}  {:>10}",
                c.kind,
                thousands(c.count),
                human_bytes(c.bytes),
                c.gbps
                    .map_or_else(|| "-".to_string(), |g| format!("{g:.1}"))
            )));
        }
    }
    if !live.notes.is_empty() {
        bottom.push(Line::from(""));
        for n in live.notes.iter().take(NOTES) {
            let wrapped = crate::render::wrap::wrap(&format!("note: {n}"), width.max(40));
            bottom.extend(wrapped.lines().map(|l| Line::from(l.to_string())));
        }
    }
    // Blank line and heading of the sites, then at least one row.
    let room = height.saturating_sub(top.len() + bottom.len() + 2);
    let mut lines = top;
    lines.push(Line::from(""));
    lines.push(bold(format!(
        "{:<16}{:>14}  {:>9}  {:>7}  site",
        "live now by site", "bytes", "", "blocks"
    )));
    if live.sites.is_empty() {
        lines.push(Line::from("  no memory is held"));
    }
    let shown = live.sites.len().min(room.max(1));
    for s in &live.sites[..shown] {
        let owner = s
            .owner
            .map(|o| format!(" [{}]", owner_words(o)))
            .unwrap_or_default();
        lines.push(Line::from(format!(
            "  {:<14}{:>14}  {:>9}  {:>7}  {}{owner}",
            s.memory,
            thousands(s.bytes),
            human_bytes(s.bytes),
            thousands(s.count),
            s.label
        )));
    }
    if shown < live.sites.len() {
        if let Some(last) = lines.last_mut() {
            *last = Line::from(format!(
                "  ... and {} more sites (memshim report shows them all)",
                live.sites.len() - shown + 1
            ));
        }
    }
    lines.extend(bottom);
    lines
}

/// Who holds a site that is not the program's.
fn owner_words(owner: &str) -> &'static str {
    match owner {
        "cuda_driver" => "the CUDA driver",
        "nccl" => "NCCL",
        o if crate::report::by_design::is_by_design(o) => crate::report::by_design::describe(o),
        _ => "not the program",
    }
}

fn memory_rows(now: &Memory, peak: &Memory) -> Vec<Line<'static>> {
    let row = |what: &str, now: String, peak: String| {
        Line::from(format!("  {what:<14}{now:>22}  {peak:>14}"))
    };
    let heap_now = match now.heap_blocks {
        Some(n) => format!(
            "{} ({})",
            human_bytes(now.heap),
            crate::units::blocks(n, "block")
        ),
        None => human_bytes(now.heap),
    };
    let mut rows = vec![
        row("heap", heap_now, human_bytes(peak.heap)),
        row(
            "mappings",
            human_bytes(now.mapped),
            human_bytes(peak.mapped),
        ),
    ];
    if now.device > 0 || peak.device > 0 {
        rows.push(row(
            "device",
            human_bytes(now.device),
            human_bytes(peak.device),
        ));
    }
    rows.push(row(
        "total",
        human_bytes(now.program()),
        human_bytes(peak.program()),
    ));
    let rss = |v: Option<u64>| v.map_or_else(|| "-".to_string(), human_bytes);
    rows.push(row("resident (RSS)", rss(now.rss), rss(peak.rss)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top::live::{CopyLine, GpuLine, SiteLine};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(live: Option<&Live>, width: u16, height: u16) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(width, height)).expect("a test terminal");
        t.draw(|f| draw(f, live, "read 0.1 s ago")).expect("drawn");
        let buf = t.backend().buffer();
        (0..height)
            .map(|y| {
                let row: String = (0..width).map(|x| buf[(x, y)].symbol()).collect();
                row.trim_end().to_string()
            })
            .collect()
    }

    fn live(sites: usize) -> Live {
        Live {
            title: "grow  (pid 42)".into(),
            state: "running, traced for 3.0 s".into(),
            trace: "t/grow.42.mshim".into(),
            now: Memory {
                heap: 3_000_000,
                heap_blocks: Some(3),
                mapped: 0,
                device: 1 << 20,
                rss: Some(8 << 20),
            },
            peak: Memory {
                heap: 4_000_000,
                heap_blocks: None,
                mapped: 4096,
                device: 1 << 20,
                rss: None,
            },
            gpus: vec![GpuLine {
                device: 0,
                live: 1 << 20,
                peak: 1 << 20,
                allocated: Some(512 << 10),
                reserved: Some(1 << 20),
            }],
            sites: (0..sites)
                .map(|i| SiteLine {
                    memory: "heap",
                    bytes: 1_000_000 - i as u64,
                    count: 1,
                    label: format!("keep{i} (grow.c:{})", 10 + i),
                    owner: None,
                })
                .collect(),
            growth: vec!["heap +1.0 MiB a minute (over the last 3 s)".into()],
            copies: vec![CopyLine {
                kind: "HtoD pinned".into(),
                count: 1200,
                bytes: 1 << 30,
                gbps: Some(24.31),
            }],
            notes: vec![],
        }
    }

    #[test]
    fn one_screen_holds_memory_gpus_sites_growth_and_copies() {
        let rows = screen(Some(&live(2)), 100, 30);
        let want = [
            "memshim top: grow  (pid 42)",
            "running, traced for 3.0 s; trace t/grow.42.mshim",
            "",
            "program memory                     now            peak",
            "  heap              2.9 MiB (3 blocks)         3.8 MiB",
            "  mappings                         0 B         4.0 KiB",
            "  device                       1.0 MiB         1.0 MiB",
            "  total                        3.9 MiB         4.8 MiB",
            "  resident (RSS)               8.0 MiB               -",
            "",
            "GPU        device live     device peak   tensors allocated        reserved",
            "  0            1.0 MiB         1.0 MiB           512.0 KiB         1.0 MiB",
            "",
            "live now by site         bytes              blocks  site",
            "  heap               1,000,000  976.6 KiB        1  keep0 (grow.c:10)",
            "  heap                 999,999  976.6 KiB        1  keep1 (grow.c:11)",
            "",
            "growth",
            "  heap +1.0 MiB a minute (over the last 3 s)",
            "",
            "copies                     count         bytes        GB/s",
            "  HtoD pinned              1,200       1.0 GiB        24.3",
        ];
        assert_eq!(rows[..want.len()], want);
        assert_eq!(rows[29], "q quits; the program goes on.  read 0.1 s ago");
    }

    #[test]
    fn sites_that_do_not_fit_are_counted() {
        let rows = screen(Some(&live(40)), 100, 30);
        let shown = rows.iter().filter(|r| r.contains("(grow.c:")).count();
        let more = rows
            .iter()
            .find(|r| r.contains("more sites"))
            .expect("the rest counted");
        assert_eq!(
            more,
            &format!(
                "  ... and {} more sites (memshim report shows them all)",
                40 - shown
            )
        );
        assert_eq!(rows[29], "q quits; the program goes on.  read 0.1 s ago");
        assert_eq!(
            rows[28],
            "  HtoD pinned              1,200       1.0 GiB        24.3"
        );
    }

    #[test]
    fn a_long_note_is_wrapped_to_the_width() {
        let mut l = live(1);
        l.notes = vec![
            "attached 7.5 s after the process started: what it allocated before is not known"
                .into(),
        ];
        let rows = screen(Some(&l), 60, 30);
        let at = rows
            .iter()
            .position(|r| r.starts_with("note: "))
            .expect("the note");
        assert_eq!(
            rows[at..at + 2],
            [
                "note: attached 7.5 s after the process started: what it",
                "  allocated before is not known"
            ]
        );
    }

    #[test]
    fn before_the_first_read() {
        let rows = screen(None, 60, 5);
        assert_eq!(rows[0], "reading the trace...");
        assert_eq!(rows[4], "q quits; the program goes on.  read 0.1 s ago");
    }
}
