//! The fragmentation section: the most free memory the C library's heap held and could not return,
//! and the allocation size classes whose frees left those holes (`analysis::holes`).
use super::model::{Finding, FragmentationSection, SizeClassOut};
use crate::replay::Replayed;
use crate::units::human_bytes;

/// The fragmentation section.
pub fn fragmentation(t: &Replayed) -> FragmentationSection {
    let f = &t.fragmentation;
    let (held, ratio) = f.worst_held();
    let when = f.worst.as_ref().map_or(0, |(t, _)| *t);
    // With thin sampling the holes would be those of the sampled blocks alone: not shown.
    let counted = t.heap_totals.is_some();
    let size_classes: Vec<SizeClassOut> = f
        .holes
        .classes
        .iter()
        .map(|c| SizeClassOut {
            min_bytes: c.max_bytes / 2 + 1,
            max_bytes: c.max_bytes,
            hole_bytes: c.hole_bytes,
            holes: c.holes,
            common_size: c.common_size,
        })
        .filter(|_| !counted)
        .collect();
    let mut findings = Vec::new();
    if held >= 1 << 20 && ratio >= 0.15 {
        let behind = size_classes
            .first()
            .map(|c| {
                format!(
                    " Most of the holes were left by frees of {}-{} blocks ({} holes, {} in all, most often {} B): those blocks were freed among longer-lived neighbours.",
                    human_bytes(c.min_bytes),
                    human_bytes(c.max_bytes),
                    c.holes,
                    human_bytes(c.hole_bytes),
                    c.common_size
                )
            })
            .unwrap_or_default();
        findings.push(Finding {
            kind: "heap_fragmentation",
            text: format!(
                "the C library's heap held {} free that it could not return to the system ({:.0}% of its arena): blocks of different sizes and lifetimes interleave, so freed holes sit under live blocks.{behind} Allocating long-lived data together, size classes, or an allocator like jemalloc reduce it",
                human_bytes(held),
                ratio * 100.0
            ),
            bytes: Some(held),
         ..Default::default() });
    }
    FragmentationSection {
        samples: f.samples,
        peak_free_held_bytes: held,
        peak_free_held_time_s: when.saturating_sub(t.header.clock_start_ns) as f64 / 1e9,
        peak_free_held_ratio: ratio,
        peak_arena_bytes: f.peak_arena,
        peak_rss_bytes: f.peak_rss,
        size_classes,
        findings,
    }
}
