//! The verdict's items and their fixes: one item of a process, said the same way whichever part
//! of the report it comes from (the heap's, the device's or PyTorch's tensors). Builds text only; it
//! decides nothing about what goes into the verdict.
use super::model::{FrameOut, GrowthSite, Process, Verdict};
use super::severity;
use super::site_label::label;
use crate::units::human_bytes;

/// Leaks from this size on are of severity "medium", smaller ones "low".
pub const LEAK_MEDIUM_BYTES: u64 = 1 << 20;

/// One verdict item of process `p`.
pub fn item(
    p: &Process,
    kind: &'static str,
    bytes: u64,
    site: Option<String>,
    text: String,
    fix: &str,
) -> Verdict {
    Verdict {
        kind,
        severity: match kind {
            // A leak is worth a look at any size, and pressing from a mebibyte.
            "leak" | "mapping_leak" if bytes >= LEAK_MEDIUM_BYTES => "medium",
            "leak" | "mapping_leak" => "low",
            _ => severity::of(kind),
        },
        pid: p.pid,
        program: p.command.clone(),
        trace: p.trace.clone(),
        bytes: Some(bytes),
        site,
        text,
        fix: fix.to_string(),
    }
}

/// The verdict item of a site of `memory` that kept growing until the end.
pub fn growth_item(p: &Process, memory: &str, g: &GrowthSite) -> Verdict {
    let site = label(&g.frames);
    let text = format!(
        "{memory} at {} grew from {} at {:.2} s to {} at {:.2} s ({}/s) and still holds {} at the end",
        site.as_deref().unwrap_or("an unnamed site"),
        human_bytes(g.from_bytes),
        g.from_time_s,
        human_bytes(g.to_bytes),
        g.to_time_s,
        human_bytes(g.rate_bytes_per_s as u64),
        human_bytes(g.live_bytes)
    );
    item(p, "growth", g.to_bytes, site, text, fix("growth"))
}

/// A climb given back: (bytes, seconds) at its start and at its peak, and when it was released.
pub struct Climb {
    pub from: (u64, f64),
    pub peak: (u64, f64),
    pub released_s: f64,
}

/// The verdict item of a site of `memory` that grew and gave it back.
pub fn released_item(p: &Process, memory: &str, frames: &[FrameOut], c: &Climb) -> Verdict {
    let site = label(frames);
    let text = format!(
        "{memory} at {} grew from {} at {:.2} s to {} at {:.2} s and was given back at {:.2} s",
        site.as_deref().unwrap_or("an unnamed site"),
        human_bytes(c.from.0),
        c.from.1,
        human_bytes(c.peak.0),
        c.peak.1,
        c.released_s
    );
    item(
        p,
        "released_growth",
        c.peak.0,
        site,
        text,
        fix("released_growth"),
    )
}

/// What to do about a verdict of `kind`.
pub fn fix(kind: &str) -> &'static str {
    match kind {
        "leak" => "free the blocks when done with them; if they are kept on purpose until exit, nothing is lost",
        "growth" => "bound what this site keeps (a cache, list or queue that only grows): evict, cap or free old entries",
        "released_growth" => "the peak is what the machine must hold: build the data in pieces, stream it, or free each part as soon as it is used",
        "out_of_memory" | "torch_oom" => "hold less at the failing moment: smaller batches or buffers, free what is no longer needed first, or use a larger device",
        "capacity_bound" | "near_capacity" => "the device is nearly full: shrink the largest allocations or batch, or free cached memory between phases",
        "held_at_exit" => "nothing is lost: the process's end frees them; if it is more than the program should keep, drop the references (lists, caches, globals) that hold these tensors",
        "held_at_detach" => "nothing is known to be lost: the process went on after memshim detached and may still free it; what grew while attached is said as growth; attach for longer to see whether it is kept",
        "trace_incomplete" => "give the trace room: a directory on a disk with space (memshim run -o DIR), no file-size limit, or less to record (--sample 512K); then run again",
        "device_leak" => "free device memory when done (cuMemFree / cudaFree / drop the tensors), or keep it on purpose",
        "gpu_idle" => "the GPU waits on input: load and prepare data ahead (more loader workers, pinned memory, prefetch)",
        "bandwidth_bound" => "kernels are limited by memory traffic: fuse operations, use smaller data types, reuse data on the device",
        "sync_copies" | "pageable_copy" | "pageable_async_copy" | "pinning_would_save" | "below_ceiling" => "copy from pinned (page-locked) host memory, asynchronously on a stream, and overlap copies with work",
        "repeated_copy" => "copy the data to the device once and keep it there",
        "small_copies" => "batch small copies into one larger copy",
        "remote_memory" | "placed_remote" | "pinned_remote" | "first_touch" => "allocate and first touch memory on the node of the threads (or GPU) that use it: bind the thread first, or use numa_alloc_onnode / mbind",
        "thread_migration" => "bind threads to the CPUs of the node that holds their memory",
        "heap_fragmentation" => "free memory is held in holes: allocate long-lived and short-lived blocks apart, or use pools of one size",
        _ => "see the finding's evidence in the process's details",
    }
}
