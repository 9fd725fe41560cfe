//! The CPU memory system on this machine: heap fragmentation and the size classes behind it, the perf
//! counters at the end and over time, and the one-node statement.
use serde_json::{json, Value};

use crate::report::*;
use crate::util::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn fragmenting_pattern_holds_far_more_free_memory_than_compact_one() {
    let held = |name: &str| -> (u64, Vec<String>) {
        let dir = TestDir::new(&format!("fragmentation_{name}"));
        let prog = dir.compile(&format!("{name}.c"));
        let (_, report) = traced(&dir, &prog, &NO_ARGS);
        let f = process_by_exe(&report, name)["fragmentation"].clone();
        assert!(f["samples"].as_u64().expect("samples") >= 2, "{f}");
        let kinds = f["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|x| x["kind"].as_str().expect("kind").to_string())
            .collect();
        (f["peak_free_held_bytes"].as_u64().expect("held"), kinds)
    };
    let (fragmented, f_kinds) = held("fragment");
    let (compact, c_kinds) = held("compact");
    // 20000 freed 1000 B holes under live blocks: about 20 MB the allocator cannot return.
    assert!(fragmented > 15_000_000, "{fragmented}");
    assert!(
        fragmented > 20 * compact.max(1),
        "{fragmented} vs {compact}"
    );
    assert_eq!(f_kinds, ["heap_fragmentation"]);
    assert!(c_kinds.is_empty(), "{c_kinds:?}");
}

#[test]
fn the_size_class_whose_frees_left_the_holes_comes_first() {
    let classes = |name: &str| -> (Value, Value) {
        let dir = TestDir::new(&format!("size_classes_{name}"));
        let prog = dir.compile(&format!("{name}.c"));
        let (_, report) = traced(&dir, &prog, &NO_ARGS);
        let f = process_by_exe(&report, name)["fragmentation"].clone();
        (f["size_classes"].clone(), f["findings"].clone())
    };
    // fragment.c frees every other one of 40000 blocks of 1000 B between live ones: 20000 holes,
    // and the 3000 B blocks allocated next cannot reuse them.
    let (fragmented, findings) = classes("fragment");
    assert_eq!(
        fragmented[0],
        json!({"min_bytes": 513, "max_bytes": 1024, "hole_bytes": 20_000_000, "holes": 20000,
               "common_size": 1000}),
        "{fragmented:#}"
    );
    let text = findings[0]["text"].as_str().expect("text");
    assert!(
        text.contains("Most of the holes were left by frees of 513 B-1.0 KiB blocks (20000 holes, 19.1 MiB in all, most often 1000 B)"),
        "{text}"
    );
    // compact.c frees the top half, which the 3000 B blocks then reuse: nothing of it is a hole.
    let (compact, _) = classes("compact");
    let compact_holes: u64 = compact
        .as_array()
        .expect("size_classes")
        .iter()
        .map(|c| c["hole_bytes"].as_u64().expect("hole_bytes"))
        .sum();
    assert!(compact_holes < 64 << 10, "{compact:#}");
}

#[test]
fn software_counters_and_one_node_statement() {
    let dir = TestDir::new("software_counters_and_one_node_statement");
    let prog = dir.compile("leaky.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "leaky");
    let value = |name: &str| -> Option<u64> {
        p["counters"]["values"]
            .as_array()
            .expect("values")
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} counter"))["value"]
            .as_u64()
    };
    // Software counters exist on every Linux; the program touches fresh pages, so it faults.
    assert!(
        value("page_faults_minor").is_some_and(|v| v > 0),
        "{}",
        dump(p)
    );
    assert!(value("context_switches").is_some());
    // Hardware counters either count or say why not.
    for c in p["counters"]["values"].as_array().expect("values") {
        assert!(c["value"].is_u64() != c["error"].is_string(), "{c}");
    }
    let sys_nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("node") && n[4..].parse::<u32>().is_ok()
                })
                .count()
        })
        .unwrap_or(0);
    let nodes = p["numa"]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), sys_nodes);
    if sys_nodes == 1 {
        let f = &p["numa"]["findings"][0];
        assert_eq!(f["kind"], "one_node");
        assert!(f["text"]
            .as_str()
            .expect("text")
            .contains("no misplacement"));
    }
}

#[test]
fn counters_are_sampled_over_time() {
    let dir = TestDir::new("counters_are_sampled_over_time");
    let prog = dir.compile("faults.c");
    let (out, report) = traced(&dir, &prog, &NO_ARGS);
    assert_eq!(out.stdout_str(), "faults: ok\n", "{}", out.describe());
    let p = process_by_exe(&report, "faults");
    let series = p["counters"]["series"].as_array().expect("series");
    let faults = series
        .iter()
        .find(|s| s["name"] == "page_faults_minor")
        .unwrap_or_else(|| panic!("no page_faults_minor series: {series:#?}"));
    let points: Vec<(f64, u64)> = faults["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| (p[0].as_f64().expect("time"), p[1].as_u64().expect("total")))
        .collect();
    // 1.5 s with a reading at 0.1 s and one a second after: at least two readings, of 256 faults every 20 ms.
    assert!(points.len() >= 2, "{points:?}");
    assert!(
        points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
        "increasing: {points:?}"
    );
    let end = p["counters"]["values"]
        .as_array()
        .expect("values")
        .iter()
        .find(|c| c["name"] == "page_faults_minor")
        .and_then(|c| c["value"].as_u64())
        .expect("the end value");
    let last = points.last().expect("a reading").1;
    assert!(last <= end, "{last} > {end}");
    // About a second apart, each with thousands of faults in between.
    assert!(points[1].1 - points[0].1 > 2000, "{points:?}");
    // On one node, no thread is sampled for NUMA and there is nothing to say about migration.
    if p["numa"]["nodes"].as_array().expect("nodes").len() == 1 {
        assert_eq!(p["numa"]["threads"], json!([]));
    }
}
