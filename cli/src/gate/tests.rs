use super::*;
use crate::render::fixture_report;

fn limit(s: &str) -> Limit {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn limits_parse_with_any_size_spelling() {
    assert_eq!(limit("leaked-heap=24MiB"), Limit::LeakedHeap(24 << 20));
    assert_eq!(limit("peak-heap=1.5G"), Limit::PeakHeap(3 << 29));
    assert_eq!(limit("leaked-device=0"), Limit::LeakedDevice(0));
    assert_eq!(limit("peak-device=4096"), Limit::PeakDevice(4096));
    assert_eq!(limit("growth"), Limit::Growth);
    assert_eq!(limit("peak-heap=1.5G").to_string(), "peak-heap=1.5GiB");
}

#[test]
fn bad_limits_say_what_to_write() {
    let e = "leaks=1M".parse::<Limit>().unwrap_err();
    assert!(
        e.contains("`leaks=1M` is not a limit") && e.contains("leaked-heap=SIZE"),
        "{e}"
    );
    let e = "peak-heap".parse::<Limit>().unwrap_err();
    assert!(e.contains("needs a size"), "{e}");
    let e = "growth=1M".parse::<Limit>().unwrap_err();
    assert!(e.contains("takes no size"), "{e}");
    let e = "peak-heap=lots".parse::<Limit>().unwrap_err();
    assert!(e.contains("`lots` is not a size"), "{e}");
}

#[test]
fn limits_that_hold_print_nothing() {
    // The fixture: 4396 B leaked by the main process and 512 B by its child, a 1 MiB heap peak,
    // 124 MiB of device memory left allocated, a 96 MiB device peak.
    let r = fixture_report();
    let holds = [
        Limit::LeakedHeap(4908),
        Limit::PeakHeap(1 << 20),
        Limit::LeakedDevice(124 << 20),
        Limit::PeakDevice(96 << 20),
    ];
    assert_eq!(check(&r, &holds), Vec::<String>::new());
}

#[test]
fn a_broken_leak_limit_sums_the_processes_and_names_the_largest_site() {
    let r = fixture_report();
    let lines = check(&r, &[Limit::LeakedHeap(4907)]);
    assert_eq!(
        lines,
        [
            "limit leaked-heap=4.8KiB broken: 4.8 KiB leaked on the heap, 1 B over; \
          the most from load_vocab data.c:41 (4.0 KiB) in train (pid 100)"
        ]
    );
}

#[test]
fn a_broken_device_limit_names_the_python_line() {
    let mut r = fixture_report();
    // Without the 64 MiB native site, the largest is the Python step's 40 MiB.
    r.processes[0].leaks.device.sites.remove(0);
    r.processes[0].leaks.device.bytes -= 64 << 20;
    crate::report::figures::fill(&mut r);
    let lines = check(&r, &[Limit::LeakedDevice(1 << 20)]);
    assert_eq!(
        lines,
        [
            "limit leaked-device=1.0MiB broken: 60.0 MiB of device memory leaked, 59.0 MiB over; \
          the most from train_step train.py:27 (40.0 MiB) in train (pid 100)"
        ]
    );
}

#[test]
fn peaks_take_the_highest_process_and_every_broken_limit_gets_a_line() {
    let r = fixture_report();
    let lines = check(
        &r,
        &[
            Limit::PeakHeap(1 << 19),
            Limit::PeakDevice(1 << 20),
            Limit::Growth,
        ],
    );
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0],
        "limit peak-heap=512.0KiB broken: 1.0 MiB heap peak, 512.0 KiB over"
    );
    assert_eq!(
        lines[1],
        "limit peak-device=1.0MiB broken: 96.0 MiB device peak, 95.0 MiB over"
    );
    assert_eq!(
        lines[2],
        "limit growth broken: 1 site kept growing; the fastest cache_result train.c:55 \
         (+584.6 KiB/s, 1.0 KiB -> 1.0 MiB) in train (pid 100)"
    );
}

#[test]
fn no_growth_holds_the_growth_limit() {
    let mut r = fixture_report();
    r.processes[0].growth.host.clear();
    assert!(check(&r, &[Limit::Growth]).is_empty());
}

#[test]
fn under_pytorchs_allocator_leaked_device_memory_is_the_tensors_still_held() {
    let mut r = fixture_report();
    // The driver saw 124 MiB still allocated (the cache's segments); the allocator says one 8 MiB
    // tensor was still held when the interpreter began to shut down.
    let p = &mut r.processes[0];
    p.torch.state = "on";
    p.torch.held_at_end.bytes = 8 << 20;
    p.torch.held_at_end.count = 1;
    let mut held = p.leaks.device.sites.remove(1);
    held.bytes = 8 << 20;
    p.torch.held_at_end.sites.push(held);
    crate::report::figures::fill(&mut r);
    assert!(check(&r, &[Limit::LeakedDevice(8 << 20)]).is_empty());
    assert_eq!(
        check(&r, &[Limit::LeakedDevice(1 << 20)]),
        [
            "limit leaked-device=1.0MiB broken: 8.0 MiB of device memory leaked, 7.0 MiB over; \
          the most from train_step train.py:27 (8.0 MiB) in train (pid 100)"
        ]
    );
}
