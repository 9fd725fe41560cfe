//! The heap summary and host leak totals of a trace made in the thin sampling mode, where the shim
//! recorded only sampled allocations and counted every call: the totals come from its counts, the
//! sites stay what their sampled blocks say (with scaled estimates).
use super::model::{HeapSummary, LeakClass};
use crate::analysis::heap_totals::Counted;

/// `HeapSummary::totals_from` when every allocation and free was an event.
pub const FROM_EVENTS: &str = "events";
/// `HeapSummary::totals_from` when the totals are the shim's counts.
pub const FROM_COUNTS: &str = "counts";

/// What a reader of a counted heap summary must know (`HeapSummary::totals_note`).
fn note(heap: &HeapSummary) -> Option<&'static str> {
    (heap.totals_from == FROM_COUNTS).then_some(
        "(thin sampling: only sampled allocations were recorded; these totals were counted in the process, live and peak bytes as usable sizes of every live block, a fork child's inherited ones included, the peak the higher of the readings every 100 ms and the most the sampled blocks held at once; temporary allocations are not known)",
    )
}

/// Puts the counted totals in place of what the sampled events alone would say. The peak stays the
/// sampled blocks' own where they held more at once than any reading saw: readings every 100 ms
/// miss a short-lived high (a sort's 4 MiB buffer), and the sampled blocks are real blocks, a
/// lower bound of what was live then. The sites held at the peak are the sampled blocks' picture
/// at their own peak, so they never exceed the peak they are shown under.
pub fn apply(
    c: &Counted,
    ns_to_s: impl Fn(u64) -> f64,
    heap: &mut HeapSummary,
    host: &mut LeakClass,
) {
    heap.totals_from = FROM_COUNTS;
    heap.totals_note = note(heap);
    heap.allocations = c.allocations();
    heap.frees = c.frees();
    heap.allocated_bytes = c.allocated_bytes();
    heap.live_bytes = c.last.live_usable();
    heap.live_count = c.last.live_count();
    if c.peak_usable >= heap.peak_bytes {
        heap.peak_bytes = c.peak_usable;
        heap.peak_time_s = if heap.peak_bytes > 0 {
            ns_to_s(c.peak_t)
        } else {
            0.0
        };
    }
    // Which frees were of a block its thread had just allocated is not known from counts.
    heap.temporary_allocations = 0;
    let sampled_bytes: u64 = host.sites.iter().map(|s| s.bytes).sum();
    let sampled_count: u64 = host.sites.iter().map(|s| s.count).sum();
    host.bytes = heap.live_bytes;
    host.count = heap.live_count;
    host.unsampled_bytes = host.bytes.saturating_sub(sampled_bytes);
    host.unsampled_count = host.count.saturating_sub(sampled_count);
}

#[cfg(test)]
mod tests {
    use super::*;
    use memshim_trace::HeapTotals;

    #[test]
    fn counts_replace_the_totals_and_the_rest_is_unsampled() {
        let base = HeapTotals {
            allocations: 2,
            frees: 1,
            allocated_bytes: 100,
            allocated_usable: 120,
            freed_usable: 40,
        };
        let mut c = Counted::new(1_000, base);
        c.reading(
            3_000,
            HeapTotals {
                allocations: 1002,
                frees: 801,
                allocated_bytes: 50_100,
                allocated_usable: 64_120,
                freed_usable: 48_040,
            },
        );
        let mut heap = crate::render::fixture::heap(0);
        let mut host = LeakClass::default();
        host.sites
            .push(crate::render::fixture::site(4000, 2, Vec::new()));
        apply(&c, |ns| ns as f64 / 1e9, &mut heap, &mut host);
        assert_eq!(heap.totals_from, FROM_COUNTS);
        assert_eq!(
            (heap.allocations, heap.frees, heap.allocated_bytes),
            (1000, 800, 50_000)
        );
        assert_eq!((heap.live_bytes, heap.live_count), (16_080, 201));
        assert_eq!((heap.peak_bytes, heap.peak_time_s), (16_080, 3e-6));
        assert_eq!(heap.temporary_allocations, 0);
        assert_eq!((host.bytes, host.count), (16_080, 201));
        assert_eq!((host.unsampled_bytes, host.unsampled_count), (12_080, 199));
        assert!(note(&heap).is_some_and(|n| n.contains("usable")));
        heap.totals_from = FROM_EVENTS;
        assert_eq!(note(&heap), None);
    }

    #[test]
    fn a_sampled_high_that_no_reading_saw_stays_the_peak() {
        let none = HeapTotals {
            allocations: 0,
            frees: 0,
            allocated_bytes: 0,
            allocated_usable: 0,
            freed_usable: 0,
        };
        let mut c = Counted::new(1_000, none);
        // 13 KiB live at the one reading; a 4 MiB block came and went between readings.
        c.reading(
            3_000,
            HeapTotals {
                allocations: 100,
                frees: 50,
                allocated_bytes: 4_210_000,
                allocated_usable: 4_211_000,
                freed_usable: 4_197_688,
            },
        );
        let sampled_peak = |bytes: u64, t: f64| {
            let mut heap = crate::render::fixture::heap(bytes);
            (heap.peak_time_s, heap.peak_sites_time_s) = (t, t);
            heap
        };
        let thin = |heap: &mut HeapSummary| {
            apply(&c, |ns| ns as f64 / 1e9, heap, &mut LeakClass::default());
        };
        let mut heap = sampled_peak(4_194_336, 2e-6);
        thin(&mut heap);
        assert_eq!((heap.peak_bytes, heap.peak_time_s), (4_194_336, 2e-6));
        assert_eq!(heap.live_bytes, 13_312);
        assert!(!heap.peak_sites_elsewhere());
        // A reading higher than the sampled blocks ever were is the peak; the sites listed under it
        // stay those of the sampled blocks' own peak, and say so.
        let mut heap = sampled_peak(9_000, 2e-6);
        thin(&mut heap);
        assert_eq!((heap.peak_bytes, heap.peak_time_s), (13_312, 3e-6));
        assert!(heap.peak_sites_elsewhere());
        let heading = crate::render::peak_sites_heading(&heap);
        assert!(
            heading == "sampled blocks at their own peak (8.8 KiB at 0.000 s)",
            "{heading}"
        );
    }
}
