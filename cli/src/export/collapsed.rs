//! Collapsed stacks (`root;...;leaf weight` per line), which flamegraph.pl, inferno and speedscope
//! read, weighted by the bytes still live at the end, live at the heap's peak, or allocated over the
//! run.
use std::io::{self, Write};

use memshim_trace::{DeviceMemory, UNSAMPLED};

use crate::analysis::{SiteStats, SiteTable};
use crate::args::{CollapsedBy, Memory};
use crate::replay::Replayed;
use crate::report::model::FrameOut;
use crate::report::sites::frames;
use crate::symbolize::Symbolizer;

/// Writes one line per site: `process;outermost;...;innermost weight`.
pub fn write(t: &Replayed, by: CollapsedBy, memory: Memory, out: &mut dyn Write) -> io::Result<()> {
    let mut sym = Symbolizer::default();
    let exe = &t.header.exe;
    let root = clean(&format!(
        "{} ({})",
        exe.rsplit('/').next().unwrap_or(exe),
        t.header.pid
    ));
    for (id, weight) in weighted_sites(t, by, memory) {
        let mut line = root.clone();
        let stack = frames(t, &mut sym, id);
        for f in crate::report::model::frame::shown(&stack).iter().rev() {
            line.push(';');
            line.push_str(&clean(&name(f)));
        }
        writeln!(out, "{line} {weight}")?;
    }
    Ok(())
}

/// The sites of one kind of memory with their weight, in stack order; sites that weigh nothing are
/// left out.
pub fn weighted_sites(t: &Replayed, by: CollapsedBy, memory: Memory) -> Vec<(u32, u64)> {
    let sites = site_stats(t, memory, by == CollapsedBy::Peak);
    let sampled = t.heap.sample_bytes > 0 && memory == Memory::Host;
    sites
        .into_iter()
        .filter(|(id, _)| *id != UNSAMPLED)
        .map(|(id, s)| {
            let weight = match by {
                CollapsedBy::Leaked if sampled => s.est_live_bytes.round().max(0.0) as u64,
                CollapsedBy::Leaked => s.live_bytes,
                CollapsedBy::Allocated => s.allocated_bytes,
                // The live bytes of the peak's picture (what each site held at that moment).
                CollapsedBy::Peak if memory == Memory::Host => s.live_bytes,
                CollapsedBy::Peak => 0,
            };
            (id, weight)
        })
        .filter(|(_, w)| *w > 0)
        .collect()
}

/// The sites of one kind of memory with their figures, in stack order (so an export is the same run
/// after run); with `at_peak`, host sites as they were when the heap peaked.
pub fn site_stats(t: &Replayed, memory: Memory, at_peak: bool) -> Vec<(u32, SiteStats)> {
    let mut sites: Vec<(u32, SiteStats)> = Vec::new();
    let mut add = |h: &SiteTable| sites.extend(h.iter().map(|(k, v)| (k, v.clone())));
    match memory {
        Memory::Host if at_peak => add(&t.heap.peak_sites()),
        Memory::Host => add(t.heap.sites()),
        Memory::Mmap => add(t.mmap.sites()),
        Memory::Device => {
            for k in [DeviceMemory::Device, DeviceMemory::Physical] {
                if let Some(h) = t.device.kinds.get(&k) {
                    add(h.sites());
                }
            }
        }
    }
    sites.sort_by_key(|(id, _)| *id);
    sites
}

/// A frame's name: its function, or `module+0xoffset` when it has no symbol (the same in every run).
pub fn name(f: &FrameOut) -> String {
    f.function
        .as_deref()
        .map_or_else(|| crate::report::model::frame::place(f), str::to_string)
}

/// Semicolons separate frames and the last space separates the weight: keep both out of names.
fn clean(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}
