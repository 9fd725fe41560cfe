//! CUPTI's unified-memory counters (`MEMSHIM_CUPTI=1`) against the stand-in CUPTI
//! (`tests/cuda/standin/libcupti_standin.c`), which reports exactly what `managed_faults.c` injects:
//! totals, per managed allocation site (also after the memory was freed), flushed both while the
//! program runs and at exit; and what the report says when CUPTI is off or cannot be loaded.
use serde_json::Value;

use crate::cuda::traced_cuda;
use crate::report::*;

fn unified(report: &Value) -> &Value {
    &process_by_exe(report, "managed_faults")["device"]["unified_memory"]
}

fn finding<'a>(report: &'a Value, kind: &str) -> &'a str {
    process_by_exe(report, "managed_faults")["device"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == kind)
        .and_then(|f| f["text"].as_str())
        .unwrap_or_else(|| panic!("no {kind} finding"))
}

#[test]
fn cupti_counts_migrations_and_faults_per_managed_site() {
    let dir = crate::util::TestDir::new("cupti_unified_memory");
    let (stdout, report) = traced_cuda(&dir, "managed_faults", &[("MEMSHIM_CUPTI", "1")]);
    assert!(stdout.contains("injected 15"), "{stdout}");
    let um = unified(&report);
    assert_eq!(um["cupti"], "on", "{}", dump(um));
    // The stand-in refuses remote-map and device-to-device counters, as some GPUs do. memshim
    // loads it at the first managed allocation, before the program loads it by its path (to
    // inject records), so it is found on the loader's path: the same library.
    let detail = um["detail"].as_str().expect("detail");
    assert!(
        detail.ends_with("libcupti.so (no remote-map or device-to-device counters)"),
        "{detail}"
    );
    // The counters ran before the first managed allocation was returned: nothing unwatched.
    assert_eq!(
        um["unwatched_from_s"],
        serde_json::Value::Null,
        "{}",
        dump(um)
    );
    assert_eq!(um["unwatched_bytes"], 0);
    let n = |k: &str| um[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    assert_eq!(n("htod_bytes"), 6291456 + 4096);
    assert_eq!(n("dtoh_bytes"), 1048576);
    assert_eq!(n("gpu_page_faults"), 24);
    assert_eq!(n("cpu_page_faults"), 5);
    assert_eq!(n("thrashing"), 2);
    assert_eq!(n("dtod_bytes"), 0);
    // Started by the sampler within about 100 ms of the first CUDA call.
    let since = um["since_s"].as_f64().expect("since_s");
    assert!(since > 0.0 && since < 5.0, "{since}");
    let sites = um["sites"].as_array().expect("sites");
    assert_eq!(sites.len(), 2, "{}", dump(um));
    let site = |i: usize| {
        let s = &sites[i];
        (
            functions(s).first().map(|f| f.to_string()),
            s["htod_bytes"].as_u64(),
            s["dtoh_bytes"].as_u64(),
            s["gpu_page_faults"].as_u64(),
            s["cpu_page_faults"].as_u64(),
            s["thrashing"].as_u64(),
        )
    };
    assert_eq!(
        site(0),
        (
            Some("alloc_features".into()),
            Some(6291456),
            Some(0),
            Some(24),
            Some(0),
            Some(2)
        )
    );
    assert_eq!(
        site(1),
        (
            Some("alloc_labels".into()),
            Some(0),
            Some(1048576),
            Some(0),
            Some(5),
            Some(0)
        )
    );
    let text = finding(&report, "managed_migrations");
    assert!(
        text.starts_with("managed memory migrated 6.0 MiB to the GPU and 1.0 MiB back, in 24 GPU page-fault groups and 5 CPU page faults (CUPTI, counting from ")
            && text.contains(" s) (most at alloc_features)"),
        "{text}"
    );
    assert!(text.contains("2 thrashing events"), "{text}");
}

#[test]
fn without_cupti_the_report_says_what_it_cannot_see() {
    let dir = crate::util::TestDir::new("cupti_off");
    let (stdout, report) = traced_cuda(&dir, "managed_faults", &[("MANAGED_FAULTS_OFF", "1")]);
    assert!(stdout.contains("injected 0"), "{stdout}");
    let um = unified(&report);
    assert_eq!((&um["cupti"], &um["detail"]), (&"off".into(), &Value::Null));
    let text = finding(&report, "managed_memory");
    assert!(
        text.starts_with("10.0 MiB of managed memory in 2 allocations")
            && text.contains("run with MEMSHIM_CUPTI=1"),
        "{text}"
    );

    let dir = crate::util::TestDir::new("cupti_unavailable");
    let missing = "/nonexistent/libcupti.so";
    let (_, report) = traced_cuda(
        &dir,
        "managed_faults",
        &[
            ("MANAGED_FAULTS_OFF", "1"),
            ("MEMSHIM_CUPTI", "1"),
            ("MEMSHIM_CUPTI_LIB", missing),
        ],
    );
    let um = unified(&report);
    assert_eq!(um["cupti"], "unavailable");
    let why = format!("cannot load MEMSHIM_CUPTI_LIB={missing}");
    assert_eq!(um["detail"], why.as_str());
    let text = finding(&report, "managed_memory");
    assert!(
        text.contains(&format!("CUPTI could not be used ({why})")),
        "{text}"
    );
}
