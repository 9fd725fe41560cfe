//! CUDA device memory against the stand-in driver (`tests/cuda`): programs that reach the driver
//! through `dlopen` + `cuGetProcAddress_v2` (as nvcc's static runtime does), and one linked with
//! `-lcuda`. Exact bytes and counts per site, by kind of memory.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::report::*;
use crate::util::*;

/// The transfers summary as (direction, host memory, copies, bytes, async copies) rows.
fn summary_rows(transfers: &Value) -> Vec<(String, String, u64, u64, u64)> {
    transfers["summary"]
        .as_array()
        .expect("summary")
        .iter()
        .map(|r| {
            (
                r["direction"].as_str().expect("direction").to_string(),
                r["host_memory"].as_str().expect("host_memory").to_string(),
                r["count"].as_u64().expect("count"),
                r["bytes"].as_u64().expect("bytes"),
                r["async_count"].as_u64().expect("async_count"),
            )
        })
        .collect()
}

/// Builds the stand-in driver and the programs into `<test dir>/cuda`.
pub fn build(dir: &TestDir) -> PathBuf {
    let out = dir.path("cuda");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda/build.sh");
    let status = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .env("EXTRA_CFLAGS", "-Werror")
        .output()
        .expect("bash runs tests/cuda/build.sh");
    assert!(
        status.status.success(),
        "building the stand-in failed:\n{}",
        String::from_utf8_lossy(&status.stderr)
    );
    out
}

/// Runs `memshim run --quiet` on a stand-in program; returns its stdout and the report.
pub fn traced_cuda(dir: &TestDir, name: &str, env: &[(&str, &str)]) -> (String, Value) {
    let bin = build(dir);
    let mut cmd = Command::new(&artifacts().memshim);
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(bin.join(name))
        .env("LD_LIBRARY_PATH", &bin)
        .current_dir(&dir.root);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("memshim runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, report_json(&dir.traces()))
}

#[test]
fn device_leaks_through_get_proc_address_and_ptsz() {
    let dir = TestDir::new("device_leaks_through_get_proc_address_and_ptsz");
    let (stdout, report) = traced_cuda(&dir, "device_leak", &[]);
    assert!(stdout.contains("pitch 1024"), "{stdout}");
    let p = process_by_exe(&report, "device_leak");
    let funcs = ["leak_device", "leak_pitch", "leak_async", "alloc_and_free"];
    assert_eq!(
        user_summary(p, "device", &funcs),
        expected(&[
            ("leak_device", 3 << 20, 3),
            ("leak_pitch", 102400, 1),
            ("leak_async", 65536, 1),
        ]),
        "{}",
        dump(p)
    );
    let d = &p["device"];
    assert_eq!(d["seen"], true);
    assert_eq!(d["allocations"], 7);
    assert_eq!(d["frees"], 2);
    assert_eq!(d["peak_bytes"], 3321856);
    assert_eq!(d["live_bytes"], 3313664);
    assert_eq!(d["failures"].as_array().map(Vec::len), Some(0));
    assert_eq!(p["leaks"]["device"]["bytes"], 3313664);
    assert_eq!(d["devices"][0]["device"], 0);
    assert_eq!(d["devices"][0]["total_bytes"], 85899345920u64);
    // The stand-in's "in use" is exactly what the program holds.
    assert_eq!(d["devices"][0]["unaccounted_bytes"], 0);
    let hist: Vec<u64> = d["size_histogram"]
        .as_array()
        .expect("size_histogram")
        .iter()
        .map(|b| b["count"].as_u64().expect("count"))
        .collect();
    assert_eq!(hist, [7, 0, 0, 0, 0, 0, 0]);
    assert_eq!(d["distinct_sizes"], 4);
    // Nothing the driver does inside a wrapped call is charged to the program's host heap.
    let from_driver = sites(p, "host")
        .iter()
        .filter(|s| {
            frames(s).iter().any(|f| {
                f["module"]
                    .as_str()
                    .is_some_and(|m| m.ends_with("libcuda.so.1"))
            })
        })
        .count();
    assert_eq!(from_driver, 0, "{}", dump(p));
}

#[test]
fn managed_pinned_and_registered_memory_apart() {
    let dir = TestDir::new("managed_pinned_and_registered_memory_apart");
    let (_, report) = traced_cuda(&dir, "managed_pinned", &[]);
    let p = process_by_exe(&report, "managed_pinned");
    let funcs = [
        "leak_managed",
        "leak_pinned",
        "pinned_roundtrip",
        "register_roundtrip",
    ];
    assert_eq!(
        user_summary(p, "managed", &funcs),
        expected(&[("leak_managed", 2 << 20, 1)])
    );
    assert_eq!(
        user_summary(p, "pinned", &funcs),
        expected(&[("leak_pinned", 256 << 10, 1)])
    );
    assert!(
        user_sites(p, "registered", &funcs).is_empty(),
        "{}",
        dump(p)
    );
    assert!(user_sites(p, "device", &funcs).is_empty(), "{}", dump(p));
    assert!(user_sites(p, "host", &funcs).is_empty(), "{}", dump(p));
    let kinds: Vec<(String, u64, u64)> = p["device"]["kinds"]
        .as_array()
        .expect("kinds")
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().expect("kind").to_string(),
                k["allocations"].as_u64().expect("allocations"),
                k["live_bytes"].as_u64().expect("live"),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        expected(&[
            ("device", 1, 0),
            ("managed", 1, 2 << 20),
            ("pinned", 2, 256 << 10),
            ("registered", 1, 0),
        ])
    );
    let hints = &p["device"]["managed_hints"];
    assert_eq!(hints["prefetch_calls"], 1);
    assert_eq!(hints["prefetch_bytes"], 2 << 20);
    assert_eq!(hints["advise_calls"], 1);
}

#[test]
fn failed_allocation_then_flush_then_retry() {
    let dir = TestDir::new("failed_allocation_then_flush_then_retry");
    let (stdout, report) =
        traced_cuda(&dir, "oom_retry", &[("STANDIN_CUDA_MEM_BYTES", "67108864")]);
    assert!(stdout.contains("try_big: 2"), "{stdout}");
    let p = process_by_exe(&report, "oom_retry");
    let failures = p["device"]["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 1, "{}", dump(p));
    let f = &failures[0];
    assert_eq!(f["api"], "cuMemAlloc");
    assert_eq!(f["size"], 33554432);
    assert_eq!(f["result"], 2);
    assert_eq!(f["error"], "CUDA_ERROR_OUT_OF_MEMORY");
    assert_eq!(f["live_device_bytes"], 41943040);
    assert_eq!(f["retried_after_freeing"], true);
    assert_eq!(f["freed_before_retry"], 41943040);
    assert_eq!(functions(f).first().copied(), Some("try_big"));
    assert_eq!(
        user_summary(p, "device", &["try_big", "hold_cache"]),
        expected(&[("try_big", 33554432, 1)])
    );
    assert_eq!(p["device"]["peak_bytes"], 41943040);
    let kinds: Vec<&str> = p["device"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["device_leak", "out_of_memory"]);
}

#[test]
fn virtual_memory_physical_leak_and_reservation() {
    let dir = TestDir::new("virtual_memory_physical_leak_and_reservation");
    let (_, report) = traced_cuda(&dir, "vmm", &[]);
    let p = process_by_exe(&report, "vmm");
    let funcs = [
        "leak_vmm",
        "create_transient",
        "release_transient",
        "reserve_va",
    ];
    assert_eq!(
        user_summary(p, "device", &funcs),
        expected(&[("leak_vmm", 2 << 20, 1)])
    );
    let kind = |name: &str| -> Value {
        p["device"]["kinds"]
            .as_array()
            .expect("kinds")
            .iter()
            .find(|k| k["kind"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} row: {}", dump(p)))
    };
    assert_eq!(kind("reserved")["live_bytes"], 64 << 20);
    assert_eq!(kind("physical")["allocations"], 2);
    assert_eq!(kind("physical")["peak_bytes"], 4 << 20);
    assert_eq!(kind("mapped")["live_bytes"], 2 << 20);
    assert_eq!(p["device"]["peak_bytes"], 4 << 20);
}

#[test]
fn program_linked_with_lcuda_is_traced_by_symbol() {
    let dir = TestDir::new("program_linked_with_lcuda_is_traced_by_symbol");
    let (_, report) = traced_cuda(&dir, "direct_link", &[]);
    let p = process_by_exe(&report, "direct_link");
    assert_eq!(
        user_summary(p, "device", &["leak_direct", "copy_scratch"]),
        expected(&[("leak_direct", 8192, 1)])
    );
    assert_eq!(p["device"]["allocations"], 2);
    assert_eq!(p["device"]["peak_bytes"], 8448);
}

#[test]
fn a_program_without_cuda_has_no_device_section() {
    let dir = TestDir::new("a_program_without_cuda_has_no_device_section");
    let prog = dir.compile("churn.c");
    let (_, report) = traced(&dir, &prog, &[] as &[&str]);
    let p = process_by_exe(&report, "churn");
    assert_eq!(p["device"]["seen"], false);
    assert_eq!(p["leaks"]["device"]["count"], 0);
}

#[test]
fn copies_by_direction_and_host_memory_exactly() {
    let dir = TestDir::new("copies_by_direction_and_host_memory_exactly");
    let (stdout, report) = traced_cuda(&dir, "copies", &[]);
    assert!(stdout.contains("done"), "{stdout}");
    let p = process_by_exe(&report, "copies");
    let tr = &p["transfers"];
    let rows: Vec<(String, String, u64, u64)> = summary_rows(tr)
        .into_iter()
        .map(|(d, h, c, b, _)| (d, h, c, b))
        .collect();
    let row = |d: &str, h: &str, c: u64, b: u64| (d.to_string(), h.to_string(), c, b);
    assert_eq!(
        rows,
        [
            row("HtoD", "pageable", 2018, 15856640),
            row("HtoD", "pinned", 10, 10485760),
            row("HtoD", "registered", 3, 3145728),
            row("HtoD", "managed", 1, 1048576),
            row("DtoH", "pageable", 7, 5767168),
            row("DtoD", "device", 2, 2097152),
        ]
    );
    let pageable = &tr["summary"][0];
    assert_eq!(pageable["async_count"], 4, "{}", dump(tr));
    assert!(pageable["gbps"].as_f64().is_some_and(|g| g > 0.0));
    assert!(
        tr["summary"][1]["seconds"].is_null(),
        "pinned async copies have no sync time"
    );

    // One site per (function, direction, host memory), named after the function that copied.
    let site = |func: &str, d: &str, h: &str| -> (u64, u64) {
        let s = tr["sites"]
            .as_array()
            .expect("sites")
            .iter()
            .find(|s| s["direction"] == d && s["host_memory"] == h && functions(s).contains(&func))
            .unwrap_or_else(|| panic!("no {func} {d} {h} site: {}", dump(tr)));
        (
            s["count"].as_u64().expect("count"),
            s["bytes"].as_u64().expect("bytes"),
        )
    };
    assert_eq!(site("pageable_h2d", "HtoD", "pageable"), (10, 10485760));
    assert_eq!(site("pinned_h2d_async", "HtoD", "pinned"), (10, 10485760));
    assert_eq!(site("pageable_h2d_async", "HtoD", "pageable"), (4, 4194304));
    assert_eq!(site("registered_h2d", "HtoD", "registered"), (3, 3145728));
    assert_eq!(site("device_d2d", "DtoD", "device"), (2, 2097152));
    assert_eq!(site("managed_h2d", "HtoD", "managed"), (1, 1048576));
    assert_eq!(site("small_storm", "HtoD", "pageable"), (2000, 128000));
    assert_eq!(site("pageable_d2h", "DtoH", "pageable"), (5, 5242880));
    assert_eq!(site("unified_copies", "HtoD", "pageable"), (4, 1048576));
    assert_eq!(site("unified_copies", "DtoH", "pageable"), (2, 524288));
    // Copies of at most 4 KiB, per site: the storm's all, nobody else's.
    let small: u64 = tr["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .map(|s| {
            let n = s["small_count"].as_u64().expect("small_count");
            let storm = functions(s).contains(&"small_storm");
            assert_eq!(n, if storm { 2000 } else { 0 }, "{s}");
            n
        })
        .sum();
    assert_eq!(small, 2000);

    let kinds: Vec<&str> = tr["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["kind"].as_str().expect("kind"))
        .collect();
    for k in ["pageable_async_copy", "small_copies", "repeated_copy"] {
        assert!(kinds.contains(&k), "no {k} finding in {kinds:?}");
    }
    // The storm is named by the line that made it.
    let storm = tr["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == "small_copies")
        .expect("small copies finding");
    assert!(
        storm["text"].as_str().is_some_and(
            |t| t.contains("; the most from small_storm (copies.c:122) (2,000 copies):")
        ),
        "{storm}"
    );
    let async_finding = tr["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == "pageable_async_copy")
        .expect("pageable async finding");
    assert!(
        async_finding["text"].as_str().is_some_and(
            |t| t.starts_with("4 asynchronous HtoD") && t.contains("pageable_h2d_async")
        ),
        "{async_finding}"
    );
    let hist: u64 = tr["histogram"]
        .as_array()
        .expect("histogram")
        .iter()
        .map(|b| b["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(hist, 2041);
    // Bandwidth over time: one series per kind of copy.
    let bw = p["timeline"]["transfers"]
        .as_array()
        .expect("timeline.transfers");
    assert_eq!(bw.len(), 6);
    assert!(bw.iter().any(|s| s["kind"] == "HtoD pinned"));
}

#[test]
fn bench_stores_ceilings_and_reports_compare_against_them() {
    let dir = TestDir::new("bench_stores_ceilings_and_reports_compare_against_them");
    traced_cuda(&dir, "copies", &[]);
    let ceilings = dir.path("ceilings.json");
    let report_with = |path: &Path| -> Value {
        let out = run_ok(
            memshim_cmd()
                .args(["report", "--format", "json"])
                .arg(dir.traces())
                .env("MEMSHIM_CEILINGS", path),
        );
        crate::report::parse(&out.stdout)
    };
    // Ceilings a developer measured on this machine must not leak into the test.
    let without = report_with(&dir.path("no-ceilings.json"));
    let bench = run_ok(
        memshim_cmd()
            .args(["bench", "--quick", "-o"])
            .arg(&ceilings)
            .env("LD_LIBRARY_PATH", dir.path("cuda")),
    );
    let stdout = String::from_utf8_lossy(&bench.stdout);
    assert!(
        stdout.contains("GPU 0 (memshim stand-in device)"),
        "{stdout}"
    );
    let stored: Value = serde_json::from_slice(&std::fs::read(&ceilings).expect("ceilings file"))
        .expect("ceilings are JSON");
    let gpu = &stored[0]["gpus"][0];
    assert!(stored[0]["host"]["triad_one_thread_gbps"]
        .as_f64()
        .is_some_and(|g| g > 0.0));

    // Without ceilings the report says so; with them, every timed row carries its ceiling.
    let p = process_by_exe(&without, "copies");
    assert_eq!(p["transfers"]["ceilings_measured"], false);
    let report = report_with(&ceilings);
    let tr = &process_by_exe(&report, "copies")["transfers"];
    assert_eq!(tr["ceilings_measured"], true, "{}", dump(tr));
    let ceiling = |d: &str, h: &str| {
        tr["summary"]
            .as_array()
            .expect("summary")
            .iter()
            .find(|r| r["direction"] == d && r["host_memory"] == h)
            .map(|r| r["ceiling_gbps"].clone())
            .expect("row")
    };
    assert_eq!(ceiling("HtoD", "pageable"), gpu["htod_pageable_gbps"]);
    assert_eq!(ceiling("HtoD", "pinned"), gpu["htod_pinned_gbps"]);
    assert_eq!(ceiling("DtoH", "pageable"), gpu["dtoh_pageable_gbps"]);
    assert_eq!(ceiling("DtoD", "device"), gpu["dtod_gbps"]);
    assert!(ceiling("HtoD", "managed").is_null());
}

#[test]
fn perfetto_timeline_has_memory_counters_and_every_copy() {
    let dir = TestDir::new("perfetto_timeline_has_memory_counters_and_every_copy");
    traced_cuda(&dir, "copies", &[]);
    let out = run_ok(
        memshim_cmd()
            .args(["export", "--perfetto"])
            .arg(dir.traces()),
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("trace-event JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let of = |ph: &str, name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["name"] == name)
            .count()
    };
    assert_eq!(of("M", "process_name"), 1);
    assert!(of("C", "host heap") > 0);
    assert!(of("C", "device memory") > 0);
    let copies: Vec<&Value> = events.iter().filter(|e| e["cat"] == "copy").collect();
    assert_eq!(copies.len(), 2041);
    let bytes: u64 = copies
        .iter()
        .map(|e| e["args"]["bytes"].as_u64().expect("bytes"))
        .sum();
    assert_eq!(bytes, 38401024);
    assert_eq!(
        copies.iter().filter(|e| e["name"] == "HtoD pinned").count(),
        10
    );
    assert!(copies
        .iter()
        .all(|e| e["ts"].as_f64().is_some_and(|t| t >= 0.0)
            && e["dur"].as_f64().is_some_and(|d| d > 0.0)));
}

#[test]
fn ranks_of_a_job_side_by_side_with_their_imbalance() {
    let dir = TestDir::new("cuda_ranks");
    let bin = build(&dir);
    // Two ranks started together, as torchrun does: each gets RANK, LOCAL_RANK and WORLD_SIZE.
    let script = format!(
        "for r in 0 1; do RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 TORCHELASTIC_RUN_ID=t {} & done; wait",
        bin.join("rank_alloc").display()
    );
    let mut cmd = Command::new(&artifacts().memshim);
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .args(["--", "bash", "-c", &script])
        .env("LD_LIBRARY_PATH", &bin)
        .current_dir(&dir.root);
    let out = cmd.output().expect("memshim runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host = crate::util::short_hostname();
    let mut names: Vec<String> = crate::util::trace_files(&dir.traces())
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .filter(|n| n.starts_with("rank_alloc."))
        .map(|n| n.rsplitn(3, '.').nth(2).unwrap_or("").to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            format!("rank_alloc.{host}.rank0"),
            format!("rank_alloc.{host}.rank1")
        ],
        "trace files are named by host and rank"
    );
    let report = report_json(&dir.traces());
    let rows = report["ranks"]["rows"].as_array().expect("a ranks table");
    let got: Vec<(u64, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["rank"].as_u64().unwrap(),
                r["peak_device_bytes"].as_u64().unwrap(),
                r["leaked_device_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![(0, 64 << 20, 64 << 20), (1, 128 << 20, 128 << 20)]
    );
    let findings: Vec<&str> = report["ranks"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert!(
        findings.iter().any(|f| f.starts_with(
            "ranks differ in peak device memory: rank 1 has 128.0 MiB, rank 0 has 64.0 MiB (2.0x)"
        )),
        "{findings:?}"
    );
    let roles: Vec<&str> = report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["rank"].is_object())
        .map(|p| p["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.len(), 2);
    assert!(
        roles.contains(&"rank 0") && roles.contains(&"rank 1"),
        "{roles:?}"
    );
    let p = report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rank"]["rank"] == 1)
        .unwrap();
    assert_eq!(p["rank"]["launcher"], "torchrun");
    assert_eq!(p["rank"]["world_size"], 2);
}

#[test]
fn two_and_three_dimensional_peer_copies_and_memsets_exactly() {
    let dir = TestDir::new("cuda_copies_shaped");
    let (stdout, report) = traced_cuda(&dir, "copies_shaped", &[]);
    assert!(stdout.contains("done"), "{stdout}");
    let p = process_by_exe(&report, "copies_shaped");
    let rows = summary_rows(&p["transfers"]);
    let row = |d: &str, h: &str, c, b, a| (d.to_string(), h.to_string(), c, b, a);
    assert_eq!(
        rows,
        [
            row("HtoD", "pageable", 1, 6400, 0),
            row("DtoH", "pinned", 1, 6400, 1),
            row("DtoD", "device", 1, 256, 0),
            row("peer", "device", 2, 5120, 1),
            // 1000 + 250 x 4 + 500 x 2, and the 2D ones: 24 rows x 100 + 8 rows x 43 x 4.
            row("memset", "device", 5, 6776, 2),
        ]
    );
}

#[test]
fn a_large_pinned_buffer_is_sampled_for_numa_placement() {
    let dir = TestDir::new("cuda_pinned_placement");
    let (stdout, report) = traced_cuda(&dir, "pinned_placement", &[]);
    assert!(stdout.contains("done"), "{stdout}");
    let p = process_by_exe(&report, "pinned_placement");
    let pinned: Vec<&Value> = p["numa"]["placements"]
        .as_array()
        .expect("placements")
        .iter()
        .filter(|x| x["memory"] == "pinned")
        .collect();
    assert_eq!(pinned.len(), 1, "{}", p["numa"]);
    let x = pinned[0];
    assert_eq!(x["bytes"], 4 << 20);
    let pages: u64 = x["pages_by_node"]
        .as_array()
        .expect("pages")
        .iter()
        .map(|n| n[1].as_u64().expect("count"))
        .sum();
    assert_eq!(pages, 16, "{x}");
    assert!(functions(x).contains(&"allocate_pinned"), "{x}");
}
