//! A timeline in the Chrome trace-event JSON format, which the Perfetto UI (ui.perfetto.dev) and
//! chrome://tracing open: per process, counters of live host heap and device memory over time (and,
//! per GPU, NVML's count of the process's memory and PCIe throughput; the perf counters' totals), and
//! every copy (the first `TIMELINE_COPIES`) as a slice on its thread's track, named by direction and
//! host memory, with its bytes. A program reached by exec (same pid) gets a process track of its own.
use std::io::{self, Write};

use serde_json::{json, Value};

use crate::analysis::transfers::TIMELINE_COPIES;
use crate::replay::Replayed;
use crate::report::transfers::{direction_name, host_name};

/// Writes the events of `traces` as one JSON document.
pub fn write(traces: &[Replayed], out: &mut dyn Write) -> io::Result<()> {
    let mut events: Vec<Value> = Vec::new();
    // All processes share one time origin, so a parent and its children line up.
    let origin = traces
        .iter()
        .map(|t| t.header.clock_start_ns)
        .min()
        .unwrap_or(0);
    let us = |ns: u64| ns.saturating_sub(origin) as f64 / 1e3;
    // In start order, so an exec chain reads top to bottom.
    let mut order: Vec<&Replayed> = traces.iter().collect();
    order.sort_by_key(|t| (t.header.clock_start_ns, t.header.pid));
    let mut seen: Vec<u32> = Vec::new();
    for (sort_index, t) in order.into_iter().enumerate() {
        let real = t.header.pid;
        let name = t
            .header
            .exe
            .rsplit('/')
            .next()
            .unwrap_or(&t.header.exe)
            .to_string();
        // A program a process exec'd keeps its pid but is a process of its own here: a track id
        // past the kernel's largest pid (2^22), so its counters never mix with its predecessor's.
        let execs = seen.iter().filter(|p| **p == real).count();
        seen.push(real);
        let (pid, label) = if execs == 0 {
            (u64::from(real), format!("{name} ({real})"))
        } else {
            (
                (1u64 << 31) + sort_index as u64,
                format!("{name} ({real}, after exec {execs})"),
            )
        };
        events
            .push(json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": label}}));
        events.push(json!({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": sort_index}}));
        for &(ts, bytes) in t.host_live().points() {
            events.push(json!({"name": "host heap", "ph": "C", "ts": us(ts), "pid": pid, "args": {"live bytes": bytes}}));
        }
        for &(ts, bytes) in t.device.series.points() {
            events.push(json!({"name": "device memory", "ph": "C", "ts": us(ts), "pid": pid, "args": {"live bytes": bytes}}));
        }
        for (index, k) in &t.gpus.tracks {
            let tracks = [
                (
                    format!("GPU {index} memory of this process (NVML)"),
                    "bytes",
                    &k.process,
                ),
                (format!("GPU {index} PCIe TX (NVML)"), "bytes/s", &k.pcie_tx),
                (format!("GPU {index} PCIe RX (NVML)"), "bytes/s", &k.pcie_rx),
            ];
            for (name, unit, series) in tracks {
                for &(ts, v) in series.points() {
                    events.push(json!({"name": name, "ph": "C", "ts": us(ts), "pid": pid, "args": {unit: v}}));
                }
            }
        }
        // The perf counters' running totals, one track each (about one reading a second).
        for (name, series) in &t.counter_series.by_name {
            for &(ts, v) in series.points() {
                events.push(json!({"name": format!("{name} (perf)"), "ph": "C", "ts": us(ts), "pid": pid, "args": {"total": v}}));
            }
        }
        for &(ts, dur, tid, dir, host, size) in &t.transfers.timeline {
            events.push(json!({
                "name": format!("{} {}", direction_name(dir), host_name(host)),
                "cat": "copy",
                "ph": "X",
                "ts": us(ts),
                "dur": (dur as f64 / 1e3).max(0.001),
                "pid": pid,
                "tid": tid,
                "args": {"bytes": size},
            }));
        }
        if t.transfers.timeline.len() == TIMELINE_COPIES {
            events.push(json!({"name": format!("only the first {TIMELINE_COPIES} copies are shown"), "ph": "i", "s": "p", "ts": us(t.transfers.timeline[TIMELINE_COPIES - 1].0), "pid": pid}));
        }
    }
    let doc = json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"generator": "memshim"}});
    serde_json::to_writer(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}
