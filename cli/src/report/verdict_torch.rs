//! The verdict's items for a process whose PyTorch caching allocator memshim saw from the inside:
//! growth, growth given back, out-of-memory errors and what was still held at exit, told by the
//! tensors that held the memory. The driver-level items they replace (the cache's segments, whose
//! growth is blamed on whichever tensor made the cache grow and whose memory only the process's end
//! frees) are left out of the verdict, so nothing is said twice; the sections keep them all.
use super::model::{FrameOut, Process, Verdict};
use super::site_label::label;
use super::verdict_items::{fix, growth_item, item, released_item, Climb};
use crate::units::human_bytes;

/// True when `p`'s PyTorch allocator was seen from the inside (its own events recorded).
pub fn inside(p: &Process) -> bool {
    p.torch.state == "on"
}

/// True for a driver-level allocation made by PyTorch's caching allocator growing its cache.
pub fn through_cache(frames: &[FrameOut]) -> bool {
    frames.iter().any(|f| {
        f.module.as_deref().is_some_and(|m| {
            m.rsplit('/')
                .next()
                .is_some_and(|name| name.starts_with("libc10_cuda"))
        })
    })
}

/// Findings of these kinds are said better by [`items`] when the allocator was seen inside: the
/// driver-level leak, out-of-memory and size churn of the cache's segments, and the PyTorch
/// section's own findings that [`items`] restates with their site and fix.
pub fn said_by_tensors(kind: &str) -> bool {
    matches!(
        kind,
        "device_leak"
            | "out_of_memory"
            | "size_churn"
            | "torch_oom"
            | "torch_held"
            | "torch_released_growth"
            | "torch_step_growth"
    )
}

/// The tensors' items: every out-of-memory error, up to `per_kind` growing and released sites,
/// and what was still held at exit.
pub fn items(p: &Process, per_kind: usize) -> Vec<Verdict> {
    let t = &p.torch;
    let mut v = Vec::new();
    for o in &t.ooms {
        let top = o.holders.first();
        let site = top.and_then(|h| label(&h.frames));
        let largest = o
            .largest_free_bytes
            .map(|b| format!(", largest free block {}", human_bytes(b)))
            .unwrap_or_default();
        let held = top
            .map(|h| {
                format!(
                    "; the most held at {}: {} in {}",
                    site.as_deref().unwrap_or("an unnamed site"),
                    human_bytes(h.bytes),
                    crate::units::blocks(h.count, "tensor")
                )
            })
            .unwrap_or_default();
        v.push(item(
            p,
            "torch_oom",
            o.requested_bytes,
            site.clone(),
            format!(
                "out of memory on GPU {} at {:.2} s asking for {}, from {}: allocated {}, reserved {}, reserved but free {}{largest}{held}",
                o.device,
                o.time_s,
                human_bytes(o.requested_bytes),
                o.verdict,
                human_bytes(o.allocated_bytes),
                human_bytes(o.reserved_bytes),
                human_bytes(o.cache_free_bytes),
            ),
            oom_fix(o.verdict, o.expandable),
        ));
    }
    for g in t.steps.growth.iter().take(per_kind) {
        let site = label(&g.frames);
        v.push(item(
            p,
            "torch_step_growth",
            g.bytes,
            site.clone(),
            format!(
                "{} memory at {} grew by {} a step from step {} to step {} and holds {} at the end",
                if g.memory == "device" {
                    "tensor"
                } else {
                    "host"
                },
                site.as_deref().unwrap_or("an unnamed site"),
                human_bytes(g.bytes_per_step),
                g.since_step,
                g.until_step,
                human_bytes(g.bytes)
            ),
            fix("growth"),
        ));
    }
    for g in t.growth.iter().take(per_kind) {
        if t.steps
            .growth
            .iter()
            .any(|s| label(&s.frames) == label(&g.frames))
        {
            continue;
        }
        v.push(growth_item(p, "tensor memory", g));
    }
    for r in t.released_growth.iter().take(per_kind) {
        let climb = Climb {
            from: (r.from_bytes, r.from_time_s),
            peak: (r.peak_bytes, r.peak_time_s),
            released_s: r.released_time_s,
        };
        let memory = format!("tensor memory on GPU {}", r.device);
        v.push(released_item(p, &memory, &r.frames, &climb));
    }
    if let Some(top) = t.held_at_end.sites.first() {
        let site = label(&top.frames);
        let (kind, when) = match t.held_when {
            "python_exit" => ("held_at_exit", "when Python began to exit"),
            "detach" => ("held_at_detach", "when memshim detached"),
            _ => ("held_at_exit", "at the end of the trace"),
        };
        v.push(item(
            p,
            kind,
            t.held_at_end.bytes,
            site.clone(),
            format!(
                "{} of tensors still held {when}, in {}; the most at {}: {} in {}",
                human_bytes(t.held_at_end.bytes),
                crate::units::blocks(t.held_at_end.count, "tensor"),
                site.as_deref().unwrap_or("an unnamed site"),
                human_bytes(top.bytes),
                crate::units::blocks(top.count, "tensor")
            ),
            fix(kind),
        ));
    }
    v
}

/// What to do about an out-of-memory error of PyTorch's allocator, by its verdict.
fn oom_fix(verdict: &str, expandable: bool) -> &'static str {
    if verdict == "fragmentation" && expandable {
        "the cache's free space lies between live tensors, and expandable segments are on already: free the long-lived tensors first, or allocate them before the short-lived ones"
    } else if verdict == "fragmentation" {
        "the cache's free space is in pieces too small: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or allocate the long-lived tensors before the short-lived ones"
    } else {
        "the live tensors alone do not fit: a smaller batch, activation checkpointing or mixed precision (or a larger memory fraction, when one is set)"
    }
}
