//! The PyTorch section: the caching allocator's own events turned into tensors by the line that
//! holds them, reserved against allocated per GPU, and a verdict on every out-of-memory error.
use rustc_hash::FxHashMap as HashMap;

use super::model::{
    Finding, GrowthSite, ReleasedGrowth, Site, TorchDeviceOut, TorchOomOut, TorchSection,
};
use super::site_label::finding_place;
use super::sites::{frames, leak_class_grouped};
use crate::analysis::growth::growing;
use crate::analysis::python_sites::{groups_by_weight, regroup};
use crate::analysis::torch::{verdict, OomAt, TorchDevice, Verdict};
use crate::analysis::{merge_sites, IdTable, SiteStats};
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// Sites kept for each picture (the peak, each OOM).
const SITES: usize = 20;
/// Sites below this never count as growing.
const MIN_GROWTH: u64 = 1 << 20;

/// The PyTorch section of one process.
pub fn section(t: &Replayed, sym: &mut Symbolizer) -> TorchSection {
    // A fork child inherits the hooks its parent attached, but not the record saying so.
    let inherited = memshim_trace::TorchState {
        enabled: true,
        version: String::new(),
        backend: String::new(),
        detail: "attached in the parent process (inherited across fork)".to_string(),
    };
    let state = match &t.torch.state {
        Some(s) => s,
        None if !t.torch.devices.is_empty() => &inherited,
        None => return TorchSection::default(),
    };
    let mut out = TorchSection {
        state: if state.enabled { "on" } else { "off" },
        version: (!state.version.is_empty()).then(|| state.version.clone()),
        backend: (!state.backend.is_empty()).then(|| state.backend.clone()),
        detail: Some(state.detail.clone()),
        ..TorchSection::default()
    };
    if !state.enabled {
        out.findings.push(Finding {
            kind: "torch_driver_level",
            text: format!("PyTorch's allocator is seen at the {}", state.detail),
            ..Default::default()
        });
        return out;
    }
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    let series = |s: &crate::analysis::timeline::Series| -> Vec<(f64, u64)> {
        s.points().iter().map(|&(at, v)| (secs(at), v)).collect()
    };
    let all = merge_sites(t.torch.devices.values().map(|d| d.blocks.sites()));
    let groups = groups_by_weight(&t.py_keys, &all);
    for (&id, d) in &t.torch.devices {
        let driver_bytes = t.device.devices.get(&id).map_or(0, |p| p.live_bytes);
        let mut peak_sites = leak_class_grouped(t, sym, &d.blocks.peak_sites(), &groups).sites;
        peak_sites.truncate(SITES);
        peak_sites.iter_mut().for_each(|s| s.estimated = None);
        out.devices.push(TorchDeviceOut {
            device: id,
            allocated_bytes: d.blocks.live_bytes,
            reserved_bytes: d.reserved,
            peak_allocated_bytes: d.blocks.peak_bytes,
            peak_allocated_time_s: secs(d.blocks.peak_t),
            peak_reserved_bytes: d.reserved_peak.0,
            peak_reserved_time_s: secs(d.reserved_peak.1),
            driver_bytes,
            outside_bytes: driver_bytes.saturating_sub(d.reserved),
            peak_sites,
            peak_roles: None,
            exit_allocated_bytes: None,
            exit_reserved_bytes: None,
            allocated: series(&d.blocks.series),
            reserved: series(&d.reserved_series),
        });
    }
    let merged = match &t.torch.at_exit {
        Some(at) => {
            out.held_when = "python_exit";
            out.held_time_s = secs(at.t);
            for d in &mut out.devices {
                if let Some(&(allocated, reserved)) = at.devices.get(&d.device) {
                    (d.exit_allocated_bytes, d.exit_reserved_bytes) =
                        (Some(allocated), Some(reserved));
                }
            }
            at.holders.clone()
        }
        None => {
            if t.detached() {
                out.held_when = "detach";
            }
            out.held_time_s = secs(t.last_t);
            all.clone()
        }
    };
    out.held_at_end = leak_class_grouped(t, sym, &merged, &groups);
    out.held_at_end
        .sites
        .iter_mut()
        .for_each(|s| s.estimated = None);
    for (&id, d) in &t.torch.devices {
        growth(t, sym, id, d, &groups, &mut out);
    }
    out.ooms = t
        .torch
        .all_ooms()
        .iter()
        .map(|o| oom(t, sym, o, &groups))
        .collect();
    super::torch_steps::apply(t, sym, &groups, &mut out);
    findings(&mut out);
    out
}

/// Growth still climbing at the end, and growth given back (judged over the site's life up to
/// when it gave the memory back).
fn growth(
    t: &Replayed,
    sym: &mut Symbolizer,
    id: i32,
    d: &TorchDevice,
    groups: &IdTable<u32>,
    out: &mut TorchSection,
) {
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    // The interpreter's teardown frees what the program's globals held: that is not growth given
    // back, so a Python program's growth is judged when it began to exit, with what it held then.
    let exit = t.torch.at_exit.as_ref();
    let end = exit.map_or(d.blocks.last_t, |a| a.t.min(d.blocks.last_t));
    let held_at_exit;
    let base = match exit {
        Some(a) => {
            let mut m = d.blocks.sites().clone();
            for (id, s) in m.iter_mut() {
                s.live_bytes = a.holders.get(&id).map_or(0, |h| h.live_bytes);
            }
            held_at_exit = m;
            &held_at_exit
        }
        None => d.blocks.sites(),
    };
    let sites = regroup(base, groups);
    for g in growing(sites.iter(), end, MIN_GROWTH) {
        out.growth.push(GrowthSite {
            from_bytes: g.from.1,
            from_time_s: secs(g.from.0),
            to_bytes: g.to.1,
            to_time_s: secs(g.to.0),
            rate_bytes_per_s: g.rate,
            live_bytes: g.live_end,
            frames: frames(t, sym, g.stack),
        });
    }
    // Release times belong to raw stack ids; a Python-grouped site takes its members' latest, and
    // what those members still hold: a member that never gave anything back (a library workspace
    // allocated once on the same line, say) is no part of what was released.
    let mut released: HashMap<u32, (u64, u64)> = HashMap::default();
    for (stack, r) in &d.releases {
        if let Some(at) = r.released_t.filter(|&at| exit.is_none_or(|e| at < e.t)) {
            let group = groups.get(stack).copied().unwrap_or(*stack);
            let e = released.entry(group).or_default();
            e.0 = e.0.max(at);
            e.1 += base.get(stack).map_or(0, |s| s.live_bytes);
        }
    }
    let mut list: Vec<ReleasedGrowth> = Vec::new();
    for (stack, s) in sites.iter() {
        let Some(&(at, live)) = released.get(&stack) else {
            continue;
        };
        let peak = s.high_water.points.last().map_or(0, |p| p.1);
        if live * 2 >= peak {
            continue;
        }
        // Judged as if it still held its peak at its release: did it climb over most of its life?
        let held = SiteStats {
            live_bytes: peak,
            high_water: s.high_water.clone(),
            ..SiteStats::default()
        };
        if let Some(g) = growing([(stack, &held)].into_iter(), at, MIN_GROWTH).first() {
            list.push(ReleasedGrowth {
                device: id,
                from_bytes: g.from.1,
                from_time_s: secs(g.from.0),
                peak_bytes: g.to.1,
                peak_time_s: secs(g.to.0),
                released_time_s: secs(at),
                live_bytes: live,
                frames: frames(t, sym, stack),
            });
        }
    }
    list.sort_by_key(|g| std::cmp::Reverse(g.peak_bytes));
    out.released_growth.extend(list);
}

fn oom(t: &Replayed, sym: &mut Symbolizer, o: &OomAt, groups: &IdTable<u32>) -> TorchOomOut {
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    let cache_free = o.reserved.saturating_sub(o.allocated);
    let v = verdict(o);
    let req = human_bytes(o.oom.requested);
    let text = match v {
        Verdict::Fragmentation => format!(
            "fragmentation: the cache held {} free (reserved {}, allocated {}) but {}; {}",
            human_bytes(cache_free),
            human_bytes(o.reserved),
            human_bytes(o.allocated),
            match o.oom.largest_free {
                Some(l) => format!("no free block of {req} (the largest was {})", human_bytes(l)),
                None => format!("no free block of {req}"),
            },
            if o.expandable {
                "expandable segments are on already, and the free space lies between live tensors within their pages: free the long-lived tensors first, or allocate them before the short-lived ones"
            } else {
                "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or free the long-lived tensors first (allocate them before the short-lived ones)"
            }
        ),
        Verdict::Capacity => format!(
            "capacity: live tensors held {} and the request was {req}{}; a smaller batch, activation checkpointing or mixed precision",
            human_bytes(o.allocated),
            if o.oom.device_total == 0 {
                String::new()
            } else if o.oom.device_free > o.oom.device_total {
                format!(
                    ", against the {} PyTorch may use (a memory fraction; the driver had {} free)",
                    human_bytes(o.oom.device_total),
                    human_bytes(o.oom.device_free)
                )
            } else {
                format!(
                    ", with {} free of the GPU's {}",
                    human_bytes(o.oom.device_free),
                    human_bytes(o.oom.device_total)
                )
            }
        ),
    };
    let mut holders: Vec<Site> = leak_class_grouped(t, sym, &o.holders, groups).sites;
    holders.truncate(SITES);
    holders.iter_mut().for_each(|s| s.estimated = None);
    TorchOomOut {
        time_s: secs(o.t),
        device: o.oom.device,
        requested_bytes: o.oom.requested,
        device_total_bytes: o.oom.device_total,
        device_free_bytes: o.oom.device_free,
        allocated_bytes: o.allocated,
        reserved_bytes: o.reserved,
        cache_free_bytes: cache_free,
        largest_free_bytes: o.oom.largest_free,
        verdict: match v {
            Verdict::Fragmentation => "fragmentation",
            Verdict::Capacity => "capacity",
        },
        expandable: o.expandable,
        text,
        holders,
        roles: None,
        frames: frames(t, sym, o.oom.stack),
    }
}

fn findings(out: &mut TorchSection) {
    let mut f = Vec::new();
    if let Some(top) = out.held_at_end.sites.first() {
        f.push(Finding {
            kind: "torch_held",
            text: format!(
                "tensors still held at the end: {} in {} blocks; the most at {}: {} in {} blocks",
                human_bytes(out.held_at_end.bytes),
                out.held_at_end.count,
                finding_place(&top.frames),
                human_bytes(top.bytes),
                top.count
            ),
            ..Default::default()
        });
    }
    for g in &out.released_growth {
        f.push(Finding {
            kind: "torch_released_growth",
            text: format!(
                "tensor memory at {} grew from {} at {:.2} s to {} at {:.2} s and was given back at {:.2} s",
                finding_place(&g.frames),
                human_bytes(g.from_bytes),
                g.from_time_s,
                human_bytes(g.peak_bytes),
                g.peak_time_s,
                g.released_time_s
            ),
         ..Default::default() });
    }
    for o in &out.ooms {
        let holder = o
            .holders
            .first()
            .map(|h| {
                format!(
                    "; the most held at {}: {}",
                    finding_place(&h.frames),
                    human_bytes(h.bytes)
                )
            })
            .unwrap_or_default();
        f.push(Finding {
            kind: "torch_oom",
            text: format!(
                "out of memory on GPU {} at {:.2} s asking for {}: {}{holder}",
                o.device,
                o.time_s,
                human_bytes(o.requested_bytes),
                o.text
            ),
            ..Default::default()
        });
    }
    for d in &out.devices {
        if d.outside_bytes > 0 {
            f.push(Finding {
                kind: "outside_allocator",
                text: format!(
                    "GPU {}: {} of device memory is outside PyTorch's allocator at the end (the driver's {} less the {} the allocator reserved): NCCL, library workspaces and other native allocations",
                    d.device,
                    human_bytes(d.outside_bytes),
                    human_bytes(d.driver_bytes),
                    human_bytes(d.reserved_bytes)
                ),
             ..Default::default() });
        }
    }
    out.findings = f;
}
