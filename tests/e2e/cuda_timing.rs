//! GPU timing of asynchronous copies with CUDA events, against the stand-in driver, whose copies take
//! virtual GPU time at known rates (16 bytes/ns pinned, 4 pageable): exact GPU times and bandwidths,
//! small copies left untimed, and no event touched while a stream capture is underway.
use std::ffi::OsStr;

use serde_json::Value;

use crate::cuda::traced_cuda;
use crate::report::*;
use crate::util::*;

/// (copies, GPU-timed copies, GPU seconds, GPU GB/s) of one summary row.
fn gpu_row(tr: &Value, dir: &str, host: &str) -> (u64, u64, Option<f64>, Option<f64>) {
    let r = tr["summary"]
        .as_array()
        .expect("summary")
        .iter()
        .find(|r| r["direction"] == dir && r["host_memory"] == host)
        .unwrap_or_else(|| panic!("no {dir} {host} row: {}", dump(tr)));
    (
        r["count"].as_u64().expect("count"),
        r["gpu_timed_count"].as_u64().expect("gpu_timed_count"),
        r["gpu_seconds"].as_f64(),
        r["gpu_gbps"].as_f64(),
    )
}

#[test]
fn async_copies_are_timed_on_the_gpu_but_never_during_a_capture() {
    let dir = TestDir::new("async_copies_timed_on_the_gpu");
    let (stdout, report) = traced_cuda(&dir, "timed_copies", &[]);
    // The program checks with the stand-in that no event call came during its global-mode capture.
    assert!(stdout.contains("violations 0"), "{stdout}");
    let p = process_by_exe(&report, "timed_copies");
    let tr = &p["transfers"];

    // 5 + 4 timed (the 4 still in flight when the capture began), 2 inside the capture untimed.
    let (count, timed, secs, gbps) = gpu_row(tr, "HtoD", "pinned");
    assert_eq!((count, timed), (11, 9), "{}", dump(tr));
    assert_eq!(secs, Some(589824.0 / 1e9), "9 x 65536 ns");
    assert_eq!(gbps, Some(16.0));
    let (count, timed, secs, gbps) = gpu_row(tr, "HtoD", "pageable");
    assert_eq!((count, timed), (3, 3));
    assert_eq!(secs, Some(786432.0 / 1e9), "3 x 262144 ns");
    assert_eq!(gbps, Some(4.0));
    // 4 KiB copies are under the 64 KiB threshold.
    assert_eq!(gpu_row(tr, "DtoH", "pinned"), (8, 0, None, None));

    // (copies, GPU-timed copies) over the sites in `func` (one per copy line).
    let site = |func: &str| {
        tr["sites"]
            .as_array()
            .expect("sites")
            .iter()
            .filter(|s| functions(s).contains(&func))
            .fold((0, 0), |(c, g), s| {
                (
                    c + s["count"].as_u64().expect("count"),
                    g + s["gpu_timed_count"].as_u64().expect("gpu_timed_count"),
                )
            })
    };
    assert_eq!(site("pinned_uploads"), (5, 5));
    assert_eq!(site("burst_then_capture"), (6, 4));
    assert_eq!(site("small_downloads"), (8, 0));

    let out = memshim(&[OsStr::new("report"), dir.traces().as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("9 on the GPU 0.590 ms at 16.00 GB/s"),
        "{text}"
    );
}

#[test]
fn copy_events_can_be_switched_off() {
    let dir = TestDir::new("copy_events_off");
    let (stdout, report) =
        traced_cuda(&dir, "timed_copies", &[("MEMSHIM_COPY_EVENT_BYTES", "off")]);
    assert!(stdout.contains("violations 0"), "{stdout}");
    let tr = &process_by_exe(&report, "timed_copies")["transfers"];
    assert_eq!(gpu_row(tr, "HtoD", "pinned"), (11, 0, None, None));
    assert_eq!(gpu_row(tr, "HtoD", "pageable"), (3, 0, None, None));
}
