//! The growth section: sites whose live memory kept climbing, host and device.

use memshim_trace::DeviceMemory;

use super::model::{Finding, GrowthSection, GrowthSite, ReleasedSite};
use super::sites::frames;
use crate::analysis::growth::{growing, Growing};
use crate::analysis::{merge_sites, SiteTable};
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// Host sites below this never count as growing.
const HOST_MIN_BYTES: u64 = 64 << 10;
/// Device sites below this never count as growing.
const DEVICE_MIN_BYTES: u64 = 1 << 20;

/// Mapping sites below this never count as growing: an allocator maps arenas of 64 KiB to 64 MiB,
/// and one or two of them are its start, not growth.
const MAPPINGS_MIN_BYTES: u64 = 4 << 20;

/// The sites of one kind of memory, grouped by Python location (`sites::by_location`), that grew
/// until `end` (when that memory last changed).
fn grew(grouped: &SiteTable, end: u64, min_bytes: u64) -> Vec<Growing> {
    growing(grouped.iter(), end, min_bytes)
}

/// The growth section of one process; `host_sites` and `map_sites` are the host heap's and the
/// anonymous mappings' sites grouped by Python location.
pub fn section(
    t: &Replayed,
    sym: &mut Symbolizer,
    host_sites: &SiteTable,
    map_sites: &SiteTable,
) -> GrowthSection {
    let start = t.header.clock_start_ns;
    let host = grew(host_sites, t.heap.last_t, HOST_MIN_BYTES);
    let mappings = grew(map_sites, t.mmap.last_t, MAPPINGS_MIN_BYTES);
    let dev_heaps: Vec<_> = [DeviceMemory::Device, DeviceMemory::Physical]
        .iter()
        .filter_map(|k| t.device.kinds.get(k))
        .collect();
    let dev_merged = merge_sites(dev_heaps.iter().map(|h| h.sites()));
    let dev_end = dev_heaps.iter().map(|h| h.last_t).max().unwrap_or(0);
    let dev_sites = super::sites::by_location(t, &dev_merged);
    let device = grew(&dev_sites, dev_end, DEVICE_MIN_BYTES);
    let mut findings = Vec::new();
    for (what, list) in [
        ("host heap", &host),
        ("anonymous mappings", &mappings),
        ("device memory", &device),
    ] {
        if let Some(top) = list.first() {
            let at = super::sites::program_site(&frames(t, sym, top.stack))
                .map(|s| format!(", {s},"))
                .unwrap_or_default();
            findings.push(Finding {
                kind: "growth",
                text: format!(
                    "{} kept growing their {what} until the end; the fastest{at} went from {} to {} at {}/s and still holds {}",
                    crate::units::blocks(list.len() as u64, "call site"),
                    human_bytes(top.from.1),
                    human_bytes(top.to.1),
                    human_bytes(top.rate as u64),
                    human_bytes(top.live_end)
                ),
                bytes: Some(top.to.1),
             ..Default::default() });
        }
    }
    let secs = |ns: u64| ns.saturating_sub(start) as f64 / 1e9;
    let mut released = Vec::new();
    for (memory, what, sites, min) in [
        ("host", "host", host_sites, HOST_MIN_BYTES),
        (
            "mappings",
            "anonymous mappings",
            map_sites,
            MAPPINGS_MIN_BYTES,
        ),
        ("device", "device", &*dev_sites, DEVICE_MIN_BYTES),
    ] {
        // Smaller climbs given back are the interpreter's and the libraries' own comings and goings.
        for r in super::released::released(sites, min.max(1 << 20)) {
            let frames = frames(t, sym, r.stack);
            let memory_at = if memory == "mappings" {
                what.to_string()
            } else {
                format!("{what} memory")
            };
            findings.push(Finding {
                kind: "released_growth",
                text: format!(
                    "{memory_at} at {} grew from {} at {:.2} s to {} at {:.2} s and was given back at {:.2} s",
                    super::site_label::finding_place(&frames),
                    human_bytes(r.from.1),
                    secs(r.from.0),
                    human_bytes(r.peak.1),
                    secs(r.peak.0),
                    secs(r.released_t)
                ),
                bytes: Some(r.peak.1),
                site: super::site_label::label(&frames),
             ..Default::default() });
            released.push(ReleasedSite {
                memory,
                from_bytes: r.from.1,
                from_time_s: secs(r.from.0),
                peak_bytes: r.peak.1,
                peak_time_s: secs(r.peak.0),
                released_time_s: secs(r.released_t),
                live_bytes: r.live_end,
                frames,
            });
        }
    }
    // One list, largest peak first, whichever memory it was.
    released.sort_by_key(|r| std::cmp::Reverse(r.peak_bytes));
    let mut out = |g: &Growing| GrowthSite {
        from_bytes: g.from.1,
        from_time_s: secs(g.from.0),
        to_bytes: g.to.1,
        to_time_s: secs(g.to.0),
        rate_bytes_per_s: g.rate,
        live_bytes: g.live_end,
        frames: frames(t, sym, g.stack),
    };
    let host: Vec<GrowthSite> = host.iter().map(&mut out).collect();
    let mappings: Vec<GrowthSite> = mappings.iter().map(&mut out).collect();
    let device: Vec<GrowthSite> = device.iter().map(&mut out).collect();
    // The growth findings name their fastest site, known once its frames are.
    for (f, fastest) in findings.iter_mut().filter(|f| f.kind == "growth").zip(
        host.first()
            .into_iter()
            .chain(mappings.first())
            .chain(device.first()),
    ) {
        f.site = super::site_label::label(&fastest.frames);
    }
    GrowthSection {
        host,
        device,
        mappings,
        released,
        findings,
    }
}
