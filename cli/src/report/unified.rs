//! The unified-memory part of the device section: what CUPTI's counters saw of managed memory, by
//! allocation site, and the finding that says what it costs and what to do.
use super::model::{DeviceSection, Finding, UnifiedMemoryOut, UnifiedSite};
use super::sites::frames;
use crate::analysis::unified::*;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// Sites listed.
const MAX_SITES: usize = 20;

pub fn section(t: &Replayed, sym: &mut Symbolizer) -> UnifiedMemoryOut {
    let u = &t.unified;
    let Some(state) = &u.state else {
        return UnifiedMemoryOut::default();
    };
    let mut sites: Vec<_> = u.by_stack.iter().collect();
    sites.sort_by_key(|(&stack, v)| (std::cmp::Reverse(v[HTOD] + v[DTOH] + v[DTOD]), stack));
    UnifiedMemoryOut {
        cupti: if state.enabled { "on" } else { "unavailable" },
        detail: Some(state.detail.clone()),
        since_s: state
            .enabled
            .then(|| u.since.saturating_sub(t.header.clock_start_ns) as f64 / 1e9),
        unwatched_from_s: u
            .unwatched
            .filter(|_| state.enabled)
            .map(|(from, _)| from.saturating_sub(t.header.clock_start_ns) as f64 / 1e9),
        unwatched_bytes: u.unwatched.filter(|_| state.enabled).map_or(0, |(_, b)| b),
        htod_bytes: u.totals[HTOD],
        dtoh_bytes: u.totals[DTOH],
        dtod_bytes: u.totals[DTOD],
        cpu_page_faults: u.totals[CPU_PAGE_FAULTS],
        gpu_page_faults: u.totals[GPU_PAGE_FAULTS],
        thrashing: u.totals[THRASHING],
        throttling: u.totals[THROTTLING],
        remote_maps: u.totals[REMOTE_MAPS],
        sites: sites
            .into_iter()
            .take(MAX_SITES)
            .map(|(&stack, v)| UnifiedSite {
                htod_bytes: v[HTOD],
                dtoh_bytes: v[DTOH],
                cpu_page_faults: v[CPU_PAGE_FAULTS],
                gpu_page_faults: v[GPU_PAGE_FAULTS],
                thrashing: v[THRASHING],
                frames: frames(t, sym, stack),
            })
            .collect(),
    }
}

/// What managed memory cost, as far as memshim can tell: with CUPTI, the migrations and faults and
/// where they landed; without, what was allocated and prefetched and how to measure the rest.
pub fn finding(s: &DeviceSection) -> Option<Finding> {
    let managed = s.kinds.iter().find(|k| k.kind == "managed");
    let um = &s.unified_memory;
    let hints = format!(
        "prefetches covered {} ({} prefetch and {} advise calls)",
        human_bytes(s.managed_hints.prefetch_bytes),
        s.managed_hints.prefetch_calls,
        s.managed_hints.advise_calls
    );
    if um.cupti == "on" {
        // Never "none" for time the counters did not watch: managed memory allocated before they
        // started (a trace of a shim that started them late) may have moved unseen.
        let since = um.since_s.unwrap_or(0.0);
        let unwatched = um
            .unwatched_from_s
            .map(|from| {
                format!(
                    ", from {since:.3} s when its counters started: {} of managed memory was allocated from {from:.3} s, before that, and what moved of it until then is not counted",
                    human_bytes(um.unwatched_bytes)
                )
            })
            .unwrap_or_default();
        let migrated = um.htod_bytes + um.dtoh_bytes;
        if migrated == 0 && um.gpu_page_faults == 0 && um.cpu_page_faults == 0 {
            return managed.map(|m| Finding {
                kind: "managed_memory",
                text: format!(
                    "{} of managed memory in {} allocations; CUPTI counted no migrations or page faults{unwatched}; {hints}",
                    human_bytes(m.allocated_bytes),
                    m.allocations
                ),
             ..Default::default() });
        }
        let top = um
            .sites
            .first()
            .and_then(|x| super::owner::first_program_function(&x.frames))
            .map(|f| format!(" (most at {f})"))
            .unwrap_or_default();
        let thrash = if um.thrashing > 0 {
            format!(
                "; {} thrashing events: pages bounced between processors, advise them (cudaMemAdviseSetReadMostly or SetPreferredLocation)",
                um.thrashing
            )
        } else {
            String::new()
        };
        return Some(Finding {
            kind: "managed_migrations",
            text: format!(
                "managed memory migrated {} to the GPU and {} back, in {} GPU page-fault groups and {} CPU page faults (CUPTI, counting from {:.3} s{unwatched}){top}; {hints}. Each fault stalls the kernel or thread that touched the page: prefetch with cudaMemPrefetchAsync before the kernels that use it{thrash}",
                human_bytes(um.htod_bytes),
                human_bytes(um.dtoh_bytes),
                um.gpu_page_faults,
                um.cpu_page_faults,
                um.since_s.unwrap_or(0.0)
            ),
         ..Default::default() });
    }
    let m = managed?;
    let why = match um.cupti {
        "unavailable" => format!(
            "CUPTI could not be used ({})",
            um.detail.as_deref().unwrap_or("unknown")
        ),
        _ => "run with MEMSHIM_CUPTI=1 to count them with CUPTI's unified-memory counters".into(),
    };
    Some(Finding {
        kind: "managed_memory",
        text: format!(
            "{} of managed memory in {} allocations; {hints}. Page faults and bytes migrated between host and device are not measured: {why}. Unprefetched managed memory that the GPU touches first migrates page by page, on demand",
            human_bytes(m.allocated_bytes),
            m.allocations
        ),
     ..Default::default() })
}
