//! What `memshim top` shows, worked out from one replay of a trace that may still be growing: the
//! same replay and report model as `memshim report` (a trace without its end is read as far as its
//! last whole frame), boiled down to the figures of one screen.
//!
//! Each reading decodes only what was written since the last one (see `replay::follow`); the
//! report model is still built whole each time, which costs with what the trace holds live, not
//! with its length. It runs on top's own thread, so a slow reading makes the screen's figures older
//! (the status line says how old), never the keys slower or the program slower.
//!
//! Never draws and never touches the terminal (that is `screen` and `terminal`), so every figure
//! here is tested without one.
use anyhow::Result;

use crate::bench::ceilings::Ceilings;
use crate::replay::follow::Following;
use crate::report::model::{FrameOut, Process, Site};
use crate::report::site_label;

/// One screen's worth of figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    /// The command and its pid.
    pub title: String,
    /// Whether it still runs, and for how long it has been traced.
    pub state: String,
    pub trace: String,
    pub now: Memory,
    pub peak: Memory,
    pub gpus: Vec<GpuLine>,
    /// Largest live bytes first.
    pub sites: Vec<SiteLine>,
    pub growth: Vec<String>,
    pub copies: Vec<CopyLine>,
    pub notes: Vec<String>,
}

/// Program memory at one moment (or at its peaks: each part's own).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Memory {
    pub heap: u64,
    pub heap_blocks: Option<u64>,
    pub mapped: u64,
    pub device: u64,
    /// The resident set the shim's sampler read; none without readings.
    pub rss: Option<u64>,
}

impl Memory {
    /// Heap, mappings and device memory together.
    pub fn program(&self) -> u64 {
        self.heap + self.mapped + self.device
    }
}

/// One GPU: device memory as the driver handed it out, and PyTorch's allocator's own figures
/// where the trace has them.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuLine {
    pub device: i32,
    pub live: u64,
    pub peak: u64,
    /// Tensors allocated and segments reserved by PyTorch's caching allocator.
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
}

/// A call site holding memory now.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteLine {
    /// "heap", "mapped", "device" or "tensor".
    pub memory: &'static str,
    pub bytes: u64,
    pub count: u64,
    /// As the text report names sites: the program's first frame, Python's first.
    pub label: String,
    /// Who allocated it, when not the program (see `report::by_design`).
    pub owner: Option<&'static str>,
}

/// One kind of copy.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyLine {
    /// "HtoD pageable", ...
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
    /// Timed bandwidth in GB/s: of the GPU-timed copies where there are any, else of the
    /// synchronous ones.
    pub gbps: Option<f64>,
}

/// The longest stretch growth is measured over: long enough to smooth one step's noise, short
/// enough to show a change of pace soon.
const GROWTH_WINDOW_S: f64 = 60.0;
/// Growing sites shown.
const GROWTH_SITES: usize = 3;

/// The figures of the trace `f` follows, read on to what was written since the last reading.
pub fn read(f: &mut Following, ceilings: &[Ceilings]) -> Result<Live> {
    let r = f.read()?;
    let rss = (r.fragmentation.last_rss > 0).then_some(r.fragmentation.last_rss);
    let model = crate::report::build::report_of(&[r], ceilings, false);
    let p = model
        .processes
        .first()
        .ok_or_else(|| anyhow::anyhow!("{} holds no process", r.path.display()))?;
    let now_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    Ok(from_process(p, rss, now_unix_ns))
}

/// The screen's figures of the process `p`, whose resident set was `rss` at the latest reading,
/// at the wall-clock time `now_unix_ns`.
pub fn from_process(p: &Process, rss: Option<u64>, now_unix_ns: u64) -> Live {
    // A running program that allocates nothing writes no events: its trace's last event is not
    // now, and its memory has been what it is since then.
    let now_s = if p.still_writing {
        (now_unix_ns.saturating_sub(p.start_unix_ns) as f64 / 1e9).max(p.duration_s)
    } else {
        p.duration_s
    };
    Live {
        title: format!("{}  (pid {})", p.command, p.pid),
        state: state(p, now_s),
        trace: p.trace.clone(),
        now: Memory {
            heap: p.heap.live_bytes,
            heap_blocks: Some(p.heap.live_count),
            mapped: p.leaks.mmap.bytes,
            device: p.device.live_bytes,
            rss,
        },
        peak: Memory {
            heap: p.program_memory.heap_bytes,
            heap_blocks: None,
            mapped: p.program_memory.mapped_bytes,
            device: p.program_memory.device_bytes,
            rss: p.program_memory.rss_peak_bytes,
        },
        gpus: gpus(p),
        sites: sites(p),
        growth: growth(p, now_s),
        copies: p
            .transfers
            .summary
            .iter()
            .map(|row| CopyLine {
                kind: format!("{} {}", row.direction, row.host_memory),
                count: row.count,
                bytes: row.bytes,
                gbps: row.gpu_gbps.or(row.gbps),
            })
            .collect(),
        // That the trace is still being written is what top is for; the other notes stay.
        notes: p
            .notes
            .iter()
            .filter(|n| !n.starts_with("the trace is still being written"))
            .cloned()
            .collect(),
    }
}

fn state(p: &Process, now_s: f64) -> String {
    let traced = format!("{now_s:.1} s");
    let since = p
        .attached_after_s
        .map(|a| format!(", attached {a:.1} s after it started"))
        .unwrap_or_default();
    match (p.end, p.still_writing) {
        (Some(end), _) => format!("ended ({end}) after {traced} traced{since}"),
        (None, true) => format!("running, traced for {traced}{since}"),
        (None, false) => {
            format!("stopped without ending its trace (killed?) after {traced} traced{since}")
        }
    }
}

fn gpus(p: &Process) -> Vec<GpuLine> {
    let mut out: Vec<GpuLine> = p
        .device
        .devices
        .iter()
        .map(|d| GpuLine {
            device: d.device,
            live: d.live_bytes,
            peak: d.peak_bytes,
            allocated: None,
            reserved: None,
        })
        .collect();
    for t in &p.torch.devices {
        let line = match out.iter_mut().find(|g| g.device == t.device) {
            Some(line) => line,
            None => {
                out.push(GpuLine {
                    device: t.device,
                    live: 0,
                    peak: 0,
                    allocated: None,
                    reserved: None,
                });
                out.last_mut().expect("just pushed")
            }
        };
        line.allocated = Some(t.allocated_bytes);
        line.reserved = Some(t.reserved_bytes);
    }
    out.sort_by_key(|g| g.device);
    out
}

fn sites(p: &Process) -> Vec<SiteLine> {
    let line = |memory: &'static str, s: &Site| SiteLine {
        memory,
        bytes: s.bytes,
        count: s.count,
        label: label(&s.frames),
        owner: (s.owner != "program").then_some(s.owner),
    };
    let mut out: Vec<SiteLine> = Vec::new();
    out.extend(p.leaks.host.sites.iter().map(|s| line("heap", s)));
    out.extend(p.leaks.mmap.sites.iter().map(|s| line("mapped", s)));
    // Under PyTorch's allocator the tensors say who holds device memory; the driver's segments
    // would count the same bytes again, by whichever call happened to grow the cache.
    let tensors = &p.torch.held_at_end.sites;
    if tensors.is_empty() {
        out.extend(p.leaks.device.sites.iter().map(|s| line("device", s)));
    } else {
        out.extend(tensors.iter().map(|s| line("tensor", s)));
    }
    out.retain(|s| s.bytes > 0);
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.label.cmp(&b.label)));
    out
}

fn label(frames: &[FrameOut]) -> String {
    site_label::label(frames).unwrap_or_else(|| {
        frames
            .first()
            .map_or_else(|| "an unnamed site".to_string(), |f| f.address.to_string())
    })
}

fn growth(p: &Process, now_s: f64) -> Vec<String> {
    let mut out = Vec::new();
    let steps = &p.torch.steps.steps;
    if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
        if steps.len() >= 2 {
            let per = (last.end_allocated_bytes as f64 - first.end_allocated_bytes as f64)
                / (steps.len() - 1) as f64;
            out.push(format!(
                "tensors {} a step (steps {} to {})",
                signed_bytes(per),
                first.index,
                last.index
            ));
        }
    }
    for (what, series) in [
        ("heap", &p.timeline.host_live),
        ("device", &p.timeline.device_live),
    ] {
        if let Some((rate, over)) = per_minute(series, now_s) {
            out.push(format!(
                "{what} {} a minute (over the last {over:.0} s)",
                signed_bytes(rate)
            ));
        }
    }
    for g in p.torch.steps.growth.iter().take(GROWTH_SITES) {
        out.push(format!(
            "  {} {} a step: {}",
            g.memory,
            signed_bytes(g.bytes_per_step as f64),
            label(&g.frames)
        ));
    }
    let mut sites: Vec<(&'static str, &crate::report::model::GrowthSite)> = Vec::new();
    sites.extend(p.growth.host.iter().map(|g| ("heap", g)));
    sites.extend(p.growth.mappings.iter().map(|g| ("mappings", g)));
    sites.extend(p.growth.device.iter().map(|g| ("device", g)));
    sites.sort_by(|a, b| b.1.rate_bytes_per_s.total_cmp(&a.1.rate_bytes_per_s));
    for (what, g) in sites.into_iter().take(GROWTH_SITES) {
        out.push(format!(
            "  {what} {} a minute: {}",
            signed_bytes(g.rate_bytes_per_s * 60.0),
            label(&g.frames)
        ));
    }
    out
}

/// The change of `series` a minute over the last [`GROWTH_WINDOW_S`] up to `now_s` (or since the
/// series began, when that is later), and the seconds it was measured over; none over less than a
/// second. Between points the series holds its value (the shim records every change).
fn per_minute(series: &[(f64, u64)], now_s: f64) -> Option<(f64, f64)> {
    let (&(t_first, v_first), &(t_last, v_last)) = (series.first()?, series.last()?);
    let end = now_s.max(t_last);
    let start = (end - GROWTH_WINDOW_S).max(t_first);
    let v_start = series
        .iter()
        .take_while(|(t, _)| *t <= start)
        .last()
        .map_or(v_first, |&(_, v)| v);
    let over = end - start;
    (over >= 1.0).then(|| ((v_last as f64 - v_start as f64) / over * 60.0, over))
}

/// `+1.5 MiB` or `-512 B`.
fn signed_bytes(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        crate::units::human_bytes(v.abs().round() as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::Timeline;

    #[test]
    fn growth_is_measured_over_the_last_minute() {
        let series: Vec<(f64, u64)> = (0..=120).map(|s| (s as f64, 1000 * s as u64)).collect();
        let (rate, over) = per_minute(&series, 120.0).expect("a rate");
        assert_eq!((rate, over), (60_000.0, 60.0));
        // A trace shorter than a minute: over all of it.
        assert_eq!(per_minute(&series[..11], 10.0), Some((60_000.0, 10.0)));
        // Nothing changed for the last 30 s: half a minute's growth over the last minute.
        assert_eq!(per_minute(&series[..91], 120.0), Some((30_000.0, 60.0)));
        assert_eq!(
            per_minute(&series[..1], 0.5),
            None,
            "not over less than 1 s"
        );
        assert_eq!(per_minute(&[], 5.0), None);
        assert_eq!(signed_bytes(-2048.0), "-2.0 KiB");
        assert_eq!(signed_bytes(100.0), "+100 B");
    }

    #[test]
    fn the_fixture_process_as_top_shows_it() {
        let mut report = crate::render::fixture_report();
        let p = &mut report.processes[0];
        p.timeline = Timeline {
            host_live: vec![(0.0, 0), (30.0, 3 << 20)],
            ..Default::default()
        };
        p.duration_s = 30.0;
        p.still_writing = true;
        p.end = None;
        p.notes = vec![
            "the trace is still being written: ...".into(),
            "attached 1.0 s after the process started".into(),
        ];
        let live = from_process(p, Some(5 << 20), p.start_unix_ns + 40_000_000_000);
        assert_eq!(live.state, "running, traced for 40.0 s");
        assert_eq!(live.notes, ["attached 1.0 s after the process started"]);
        assert_eq!(live.now.rss, Some(5 << 20));
        assert_eq!(live.now.heap, p.heap.live_bytes);
        assert_eq!(live.now.mapped, p.leaks.mmap.bytes);
        assert_eq!(live.peak.heap, p.program_memory.heap_bytes);
        assert!(
            live.growth
                .contains(&"heap +4.5 MiB a minute (over the last 40 s)".to_string()),
            "{:?}",
            live.growth
        );
        let bytes: Vec<u64> = live.sites.iter().map(|s| s.bytes).collect();
        let mut sorted = bytes.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(bytes, sorted, "largest first");
        assert!(!live.sites.is_empty());
        assert_eq!(live.copies.len(), p.transfers.summary.len());
    }
}
