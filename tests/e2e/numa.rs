//! NUMA placement and CPU affinity calls, recorded with their arguments (libnuma from .ci/run).
use serde_json::{json, Value};

use crate::report::*;
use crate::util::*;

/// Each placement or affinity call as [call, policy, nodes, cpus, bytes, target, result, the
/// function that made it].
pub fn numa_calls(numa: &Value) -> Vec<Value> {
    numa["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            let site = functions(c).into_iter().find(|f| *f != "?").unwrap_or("?");
            json!([
                c["call"],
                c["policy"],
                c["nodes"],
                c["cpus"],
                c["bytes"],
                c["target"],
                c["result"],
                site
            ])
        })
        .collect()
}

#[test]
fn placement_and_affinity_calls_with_exact_arguments() {
    let dir = TestDir::new("placement_and_affinity_calls_with_exact_arguments");
    let prog = dir.compile_with(
        "numa_calls.c",
        "numa_calls",
        &["-g", "-O0", "-lnuma", "-pthread"],
    );
    let (out, report) = traced(&dir, &prog, &[] as &[&str]);
    assert_eq!(out.stdout_str(), "numa calls: ok\n", "{}", out.describe());
    let p = process_by_exe(&report, "numa_calls");
    let calls = numa_calls(&p["numa"]);
    assert_eq!(
        calls,
        [
            json!(["mbind", "MPOL_BIND", [0], [], 2097152, 0, 0, "bind_buffer"]),
            json!([
                "set_mempolicy",
                "MPOL_PREFERRED",
                [0],
                [],
                0,
                0,
                0,
                "prefer_node0"
            ]),
            json!([
                "set_mempolicy",
                "MPOL_DEFAULT",
                [],
                [],
                0,
                0,
                0,
                "prefer_node0"
            ]),
            json!(["sched_setaffinity", null, [], [0], 0, 0, 0, "pin_process"]),
            json!([
                "pthread_setaffinity_np",
                null,
                [],
                [0],
                0,
                0,
                0,
                "pin_thread"
            ]),
            json!([
                "mbind",
                "MPOL_BIND",
                [0],
                [],
                1048576,
                0,
                0,
                "numa_alloc_onnode"
            ]),
            json!(["move_pages", null, [0], [], 1, 0, 0, "move_first_page"]),
        ]
    );
    // numa_alloc_onnode's mapping was numa_free'd and the other unmapped: nothing left mapped.
    assert!(
        user_sites(p, "mmap", &["bind_buffer", "alloc_on_node0"]).is_empty(),
        "{}",
        dump(p)
    );
}

#[test]
fn large_blocks_are_sampled_for_their_numa_node() {
    let dir = TestDir::new("large_blocks_are_sampled_for_their_numa_node");
    let prog = dir.compile("growing.c");
    let (_, report) = traced(&dir, &prog, &[] as &[&str]);
    let numa = &process_by_exe(&report, "growing")["numa"];
    // load_table's 4 MiB block is the only one of 1 MiB or more; it lives 400 ms, long enough to be
    // sampled, and memset touched every page.
    let placements = numa["placements"].as_array().expect("placements");
    assert_eq!(placements.len(), 1, "{numa}");
    let p = &placements[0];
    assert_eq!(p["bytes"], 4 << 20);
    assert_eq!(p["absent_pages"], 0);
    let pages: u64 = p["pages_by_node"]
        .as_array()
        .expect("pages_by_node")
        .iter()
        .map(|n| n[1].as_u64().expect("pages"))
        .sum();
    assert_eq!(pages, 16);
    assert_eq!(p["frames"][0]["function"], "load_table");
    assert!(p["alloc_cpu"].is_u64() && p["alloc_node"].is_u64(), "{p}");
    let on_nodes: u64 = numa["bytes_by_node"]
        .as_array()
        .expect("bytes_by_node")
        .iter()
        .map(|n| n["bytes"].as_u64().expect("bytes"))
        .sum();
    assert_eq!(on_nodes, 4 << 20);
    if numa["nodes"].as_array().expect("nodes").len() == 1 {
        assert_eq!(p["remote"], false);
        assert_eq!(
            numa["bytes_by_node"],
            json!([{"node": 0, "bytes": 4 << 20}])
        );
    }
}
