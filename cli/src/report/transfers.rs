//! The transfers section: copies by direction and host memory, their sites, sizes and findings.
use super::model::{
    BandwidthSeries, Finding, SizeBucket, TransferRow, TransferSite, TransfersSection,
};
use super::owner::first_program_function;
use super::sites::frames;
use crate::analysis::transfers::{Direction, HostMemory, Totals, SIZE_BUCKETS, SMALL_COPY};
use crate::bench::ceilings::Ceilings;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// Sites listed.
const MAX_SITES: usize = 50;
/// This many small copies are a storm.
const STORM: u64 = 1000;
/// A host buffer copied this often is worth keeping on the device.
const REPEATS: u64 = 10;

/// The transfers section of one process.
pub fn section(t: &Replayed, sym: &mut Symbolizer, ceilings: &[Ceilings]) -> TransfersSection {
    let tr = &t.transfers;
    if tr.by_kind.is_empty() && tr.failed == 0 {
        return TransfersSection::default();
    }
    let gpu =
        crate::bench::ceilings::for_host(ceilings, &t.header.hostname).and_then(|c| c.gpus.first());
    let summary: Vec<TransferRow> = tr
        .by_kind
        .iter()
        .map(|(&(d, h), x)| {
            let (seconds, gbps) = timing(x);
            TransferRow {
                direction: direction_name(d),
                host_memory: host_name(h),
                count: x.count,
                bytes: x.bytes,
                seconds,
                gbps,
                ceiling_gbps: gpu.and_then(|g| g.for_row(direction_name(d), host_name(h))),
                async_count: x.async_count,
                async_blocked_seconds: x.async_blocked_ns as f64 / 1e9,
                gpu_timed_count: x.gpu_timed_count,
                gpu_seconds: (x.gpu_timed_count > 0).then(|| x.gpu_ns as f64 / 1e9),
                gpu_gbps: gpu_gbps(x),
            }
        })
        .collect();
    let mut grouped = rustc_hash::FxHashMap::default();
    for (&(d, h, stack), x) in &tr.by_site {
        let site = crate::analysis::python_sites::site_of(&t.py_groups, stack);
        grouped
            .entry((d, h, site))
            .or_insert_with(crate::analysis::transfers::Totals::default)
            .absorb(x);
    }
    let mut sites: Vec<_> = grouped.iter().collect();
    sites.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(b.0)));
    let sites: Vec<TransferSite> = sites
        .into_iter()
        .take(MAX_SITES)
        .map(|(&(d, h, stack), x)| TransferSite {
            direction: direction_name(d),
            host_memory: host_name(h),
            count: x.count,
            bytes: x.bytes,
            seconds: timing(x).0,
            async_count: x.async_count,
            async_blocked_seconds: x.async_blocked_ns as f64 / 1e9,
            gpu_timed_count: x.gpu_timed_count,
            gpu_gbps: gpu_gbps(x),
            small_count: x.small_count,
            frames: frames(t, sym, stack),
        })
        .collect();
    let mut histogram: Vec<SizeBucket> = SIZE_BUCKETS
        .iter()
        .zip(tr.histogram)
        .map(|(&le, count)| SizeBucket {
            le_bytes: Some(le),
            count,
        })
        .collect();
    histogram.push(SizeBucket {
        le_bytes: None,
        count: tr.histogram[SIZE_BUCKETS.len()],
    });
    // The line that made the most small copies, looked for among every site, not only those
    // listed (the list is ordered by bytes, which small copies rarely are).
    let most_small = grouped
        .iter()
        .filter(|(_, x)| x.small_count > 0)
        .max_by(|a, b| a.1.small_count.cmp(&b.1.small_count).then(b.0.cmp(a.0)))
        .map(|(&(_, _, stack), x)| (frames(t, sym, stack), x.small_count));
    let mut findings = findings(t, &sites, most_small);
    if let Some(g) = gpu {
        findings.extend(against_ceilings(&summary, g));
    }
    TransfersSection {
        summary,
        sites,
        histogram,
        failed: tr.failed,
        ceilings_measured: gpu.is_some(),
        findings,
        ..Default::default()
    }
}

/// Rows far below what this machine reached in `memshim bench`, and what pinning would save. A row's
/// achieved bandwidth is its synchronous copies' or, when it has none, its event-timed async ones'.
fn against_ceilings(rows: &[TransferRow], g: &crate::bench::ceilings::GpuCeilings) -> Vec<Finding> {
    let mut v = Vec::new();
    for r in rows {
        let achieved = match (r.gbps, r.seconds) {
            (Some(gbps), Some(secs)) => Some((gbps, secs)),
            _ => r.gpu_gbps.zip(r.gpu_seconds),
        };
        let (Some((gbps, secs)), Some(ceiling)) = (achieved, r.ceiling_gbps) else {
            continue;
        };
        if gbps < 0.5 * ceiling && r.bytes >= 1 << 20 {
            v.push(Finding {
                kind: "below_ceiling",
                text: format!(
                    "{} copies from {} memory reached {gbps:.1} GB/s, {:.0}% of the {ceiling:.1} GB/s that memshim bench measured on this machine for them (small copies and contention lower it)",
                    r.direction,
                    r.host_memory,
                    gbps * 100.0 / ceiling
                ),
             ..Default::default() });
        }
        let pinned = match r.direction {
            "HtoD" => g.htod_pinned_gbps,
            "DtoH" => g.dtoh_pinned_gbps,
            _ => continue,
        };
        if r.host_memory == "pageable" && pinned > gbps * 1.2 {
            let saved = secs - r.bytes as f64 / (pinned * 1e9);
            v.push(Finding {
                kind: "pinning_would_save",
                text: format!(
                    "{} copies from pageable memory ran at {gbps:.1} GB/s; this machine's pinned ceiling is {pinned:.1} GB/s, so pinning these buffers would save about {:.1} ms",
                    r.direction,
                    saved.max(0.0) * 1e3
                ),
             ..Default::default() });
        }
    }
    v
}

/// The bandwidth of a group's event-timed copies, in GB/s.
fn gpu_gbps(x: &Totals) -> Option<f64> {
    (x.gpu_ns > 0).then(|| x.gpu_timed_bytes as f64 / x.gpu_ns as f64)
}

fn timing(x: &Totals) -> (Option<f64>, Option<f64>) {
    if x.sync_count == 0 {
        return (None, None);
    }
    let s = x.sync_ns as f64 / 1e9;
    let gbps = (x.sync_ns > 0).then(|| x.sync_bytes as f64 / s / 1e9);
    (Some(s), gbps)
}

fn findings(
    t: &Replayed,
    sites: &[TransferSite],
    most_small: Option<(Vec<crate::report::model::FrameOut>, u64)>,
) -> Vec<Finding> {
    let tr = &t.transfers;
    let mut v = Vec::new();
    let top_site = |dir: &str, host: &str, only_async: bool| {
        sites
            .iter()
            .filter(|s| {
                s.direction == dir && s.host_memory == host && (!only_async || s.async_count > 0)
            })
            .find_map(|s| first_program_function(&s.frames).map(str::to_string))
    };
    for dir in [Direction::HtoD, Direction::DtoH] {
        if let Some(x) = tr.by_kind.get(&(dir, HostMemory::Pageable)) {
            if x.async_count > 0 {
                let d = direction_name(dir);
                v.push(Finding {
                    kind: "pageable_async_copy",
                    text: format!(
                        "{} asynchronous {d} copies used pageable host memory and blocked their thread for {:.1} ms in all{}: the driver stages pageable memory through a pinned buffer, so these \"async\" copies ran synchronously. Pin the host buffer: pin_memory=True in a PyTorch DataLoader, cudaMallocHost/cudaHostAlloc, or cudaHostRegister on an existing buffer",
                        x.async_count,
                        x.async_blocked_ns as f64 / 1e6,
                        top_site(d, "pageable", true).map(|f| format!(" (largest site: {f})")).unwrap_or_default()
                    ),
                 ..Default::default() });
            }
            if x.sync_bytes >= 1 << 20 {
                let (_, gbps) = timing(x);
                let pinned = tr
                    .by_kind
                    .get(&(dir, HostMemory::Pinned))
                    .and_then(|p| timing(p).1.or_else(|| gpu_gbps(p)));
                let compare = match (gbps, pinned) {
                    (Some(a), Some(b)) if b > a => format!(
                        ", against {b:.1} GB/s from pinned memory in the same run: pinning would have saved about {:.1} ms",
                        (x.sync_bytes as f64 / (a * 1e9) - x.sync_bytes as f64 / (b * 1e9)) * 1e3
                    ),
                    _ => String::new(),
                };
                v.push(Finding {
                    kind: "pageable_copy",
                    text: format!(
                        "{} synchronous {} copies moved {} from pageable memory at {:.1} GB/s{compare}",
                        x.sync_count,
                        direction_name(dir),
                        human_bytes(x.sync_bytes),
                        gbps.unwrap_or(0.0)
                    ),
                    bytes: Some(x.sync_bytes),
                 ..Default::default() });
            }
        }
    }
    let small: u64 = tr.histogram[..2].iter().sum::<u64>();
    if small >= STORM {
        let most = most_small
            .and_then(|(frames, n)| {
                super::sites::program_site(&frames).map(|at| {
                    format!(
                        "; the most from {at} ({} {})",
                        crate::units::thousands(n),
                        if n == 1 { "copy" } else { "copies" }
                    )
                })
            })
            .unwrap_or_default();
        v.push(Finding {
            kind: "small_copies",
            text: format!(
                "{} copies of at most {} each{most}: every copy pays a fixed launch cost of microseconds; batch them into larger copies",
                crate::units::thousands(small),
                human_bytes(SMALL_COPY)
            ),
         ..Default::default() });
    }
    if let Some((&(addr, size, _), &n)) = tr
        .repeated
        .iter()
        .filter(|(_, &n)| n >= REPEATS)
        .max_by_key(|(k, &n)| (n, k.1, k.0))
    {
        v.push(Finding {
            kind: "repeated_copy",
            text: format!(
                "the same host buffer ({} at {addr:#x}, one allocation) was copied to the device {n} times; if its contents do not change between copies, keep it on the device",
                human_bytes(size)
            ),
            bytes: Some(size * n),
         ..Default::default() });
    }
    let sync_ns: u64 = tr.by_kind.values().map(|x| x.sync_ns).sum();
    let run_ns = t.last_t.saturating_sub(t.header.clock_start_ns).max(1);
    if sync_ns * 10 > run_ns {
        v.push(Finding {
            kind: "sync_copies",
            text: format!(
                "synchronous copies took {:.1} ms, {:.0}% of the run: the calling thread waited for each; use cudaMemcpyAsync from pinned memory on a stream to overlap them with compute",
                sync_ns as f64 / 1e6,
                sync_ns as f64 * 100.0 / run_ns as f64
            ),
         ..Default::default() });
    }
    v
}

/// Intervals of the bandwidth series.
const BANDWIDTH_BUCKETS: u64 = 200;

/// Copy bandwidth over time per kind of copy, from the copies kept for timelines: each copy's bytes
/// are spread over the intervals its duration covers.
pub fn bandwidth(t: &Replayed) -> Vec<BandwidthSeries> {
    let copies = &t.transfers.timeline;
    let (Some(first), Some(last)) = (
        copies.iter().map(|c| c.0).min(),
        copies.iter().map(|c| c.0 + c.1).max(),
    ) else {
        return Vec::new();
    };
    let width = (last.saturating_sub(first) / BANDWIDTH_BUCKETS).max(1000);
    let buckets = ((last - first) / width + 1) as usize;
    let mut by_kind: std::collections::BTreeMap<(Direction, HostMemory), Vec<f64>> =
        Default::default();
    for &(start, dur, _tid, dir, host, size) in copies {
        let v = by_kind
            .entry((dir, host))
            .or_insert_with(|| vec![0.0; buckets]);
        let (from, to) = (start - first, start - first + dur.max(1));
        let (b0, b1) = (
            (from / width) as usize,
            (((to - 1) / width) as usize).min(buckets - 1),
        );
        let per_ns = size as f64 / (to - from) as f64;
        for (b, slot) in v.iter_mut().enumerate().take(b1 + 1).skip(b0) {
            let lo = from.max(b as u64 * width);
            let hi = to.min((b as u64 + 1) * width);
            *slot += per_ns * hi.saturating_sub(lo) as f64;
        }
    }
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    by_kind
        .into_iter()
        .map(|((d, h), v)| BandwidthSeries {
            kind: format!("{} {}", direction_name(d), host_name(h)),
            points: v
                .into_iter()
                .enumerate()
                .map(|(i, bytes)| (secs(first + i as u64 * width), bytes / (width as f64 / 1e9)))
                .collect(),
        })
        .collect()
}

/// The JSON name of a direction.
pub fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::HtoD => "HtoD",
        Direction::DtoH => "DtoH",
        Direction::DtoD => "DtoD",
        Direction::HtoH => "HtoH",
        Direction::Peer => "peer",
        Direction::Memset => "memset",
    }
}

/// The JSON name of a host memory kind.
pub fn host_name(h: HostMemory) -> &'static str {
    match h {
        HostMemory::Pageable => "pageable",
        HostMemory::Pinned => "pinned",
        HostMemory::Registered => "registered",
        HostMemory::Managed => "managed",
        HostMemory::Device => "device",
    }
}
