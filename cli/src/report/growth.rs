//! The growth section: sites whose live memory kept climbing, host and device.
use memshim_trace::DeviceMemory;

use super::model::{Finding, GrowthSection, GrowthSite};
use super::sites::frames;
use crate::analysis::growth::{growing, Growing};
use crate::analysis::merge_sites;
use crate::analysis::python_sites::regroup;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// Host sites below this never count as growing.
const HOST_MIN_BYTES: u64 = 64 << 10;
/// Device sites below this never count as growing.
const DEVICE_MIN_BYTES: u64 = 1 << 20;

/// The growth section of one process.
pub fn section(t: &Replayed, sym: &mut Symbolizer) -> GrowthSection {
    let start = t.header.clock_start_ns;
    let host_sites = regroup(t.heap.sites(), &t.py_groups);
    let host = growing(
        host_sites.iter().map(|(k, v)| (*k, v)),
        t.heap.last_t,
        HOST_MIN_BYTES,
    );
    let dev_heaps: Vec<_> = [DeviceMemory::Device, DeviceMemory::Physical]
        .iter()
        .filter_map(|k| t.device.kinds.get(k))
        .collect();
    let dev_merged = merge_sites(dev_heaps.iter().map(|h| h.sites()));
    let dev_sites = regroup(&dev_merged, &t.py_groups);
    let dev_end = dev_heaps.iter().map(|h| h.last_t).max().unwrap_or(0);
    let device = growing(
        dev_sites.iter().map(|(k, v)| (*k, v)),
        dev_end,
        DEVICE_MIN_BYTES,
    );
    let mut findings = Vec::new();
    for (what, list) in [("host heap", &host), ("device memory", &device)] {
        if let Some(top) = list.first() {
            findings.push(Finding {
                kind: "growth",
                text: format!(
                    "{} call site{} kept growing their {what} until the end; the fastest went from {} to {} at {}/s and still holds {}",
                    list.len(),
                    if list.len() == 1 { "" } else { "s" },
                    human_bytes(top.from.1),
                    human_bytes(top.to.1),
                    human_bytes(top.rate as u64),
                    human_bytes(top.live_end)
                ),
            });
        }
    }
    let secs = |ns: u64| ns.saturating_sub(start) as f64 / 1e9;
    let mut out = |g: &Growing| GrowthSite {
        from_bytes: g.from.1,
        from_time_s: secs(g.from.0),
        to_bytes: g.to.1,
        to_time_s: secs(g.to.0),
        rate_bytes_per_s: g.rate,
        live_bytes: g.live_end,
        frames: frames(t, sym, g.stack),
    };
    GrowthSection {
        host: host.iter().map(&mut out).collect(),
        device: device.iter().map(&mut out).collect(),
        findings,
    }
}
