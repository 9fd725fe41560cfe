//! Heap and mapping leaks: exact bytes, counts and frames per user site.
use crate::report::*;
use crate::util::*;

const NO_ARGS: [&str; 0] = [];

const LEAKY_FUNCS: [&str; 6] = [
    "leak_malloc",
    "leak_calloc",
    "grow_buffer",
    "leak_aligned",
    "leak_strdup",
    "churn",
];

#[test]
fn leaky_demo_reports_exact_leaks() {
    let dir = TestDir::new("leaky_demo_reports_exact_leaks");
    let prog = dir.compile("leaky.c");
    let (out, report) = traced(&dir, &prog, &NO_ARGS);
    assert_eq!(out.stdout_str(), "leaky: done\n", "{}", out.describe());
    let p = process_by_exe(&report, "leaky");
    assert_eq!(p["forked"], false);
    assert_eq!(p["truncated"], false);
    assert_eq!(p["end"], "exit");
    assert_eq!(
        p["argv"],
        serde_json::json!([prog.to_str().expect("utf-8 path")])
    );
    let trace = p["trace"].as_str().expect("trace path");
    assert!(
        trace.ends_with(".mshim") && std::path::Path::new(trace).is_file(),
        "trace {trace}"
    );

    assert_eq!(
        user_summary(p, "host", &LEAKY_FUNCS),
        expected(&[
            ("leak_malloc", 300, 3),
            ("leak_calloc", 100, 4),
            ("grow_buffer", 256, 1),
            ("leak_aligned", 4096, 1),
            ("leak_aligned", 512, 1),
            ("leak_aligned", 100, 1),
            ("leak_aligned", 64, 1),
            ("leak_strdup", 12, 1),
        ]),
        "\n{}",
        dump(p)
    );
    assert!(
        user_sites(p, "mmap", &LEAKY_FUNCS).is_empty(),
        "{}",
        dump(p)
    );

    // The hooked functions are called straight from the user function, which main called.
    for func in ["leak_malloc", "leak_calloc", "grow_buffer"] {
        let site = site_with(p, "host", func);
        assert_source_frame(site, 0, func, "leaky.c");
        assert_source_frame(site, 1, "main", "leaky.c");
    }
    let mut aligned_lines: Vec<u64> = user_sites(p, "host", &["leak_aligned"])
        .into_iter()
        .map(|s| {
            assert_source_frame(s, 0, "leak_aligned", "leaky.c");
            assert_source_frame(s, 1, "main", "leaky.c");
            frame(s, 0)["line"].as_u64().expect("line")
        })
        .collect();
    aligned_lines.sort_unstable();
    aligned_lines.dedup();
    assert_eq!(
        aligned_lines.len(),
        4,
        "one line per aligned call: {aligned_lines:?}"
    );

    // strdup allocates inside libc: its frame comes first, then the caller.
    let site = site_with(p, "host", "leak_strdup");
    let f0 = frame(site, 0);
    let name = f0["function"].as_str().unwrap_or("?");
    assert!(
        ["strdup", "__strdup", "__GI___strdup"].contains(&name),
        "frame 0 of the strdup site should be strdup: {:?}",
        functions(site)
    );
    assert!(
        f0["module"].as_str().is_some_and(|m| m.contains("libc.so")),
        "strdup's module should be libc: {f0}"
    );
    assert_source_frame(site, 1, "leak_strdup", "leaky.c");

    let heap = &p["heap"];
    let at_least = |key: &str, n: u64| {
        let v = heap[key].as_u64().expect("a heap counter");
        assert!(v >= n, "heap.{key} = {v}, expected at least {n}: {heap}");
    };
    // leaky.c alone: 1015 allocations, 1000 frees (plus 2 realloc moves), 13 blocks / 5440 B live
    // at exit, and 1472500 B of churn + 5440 + the 16 and 64 B steps of the realloc chain.
    at_least("allocations", 1015);
    at_least("frees", 1000);
    at_least("live_bytes", 5440);
    at_least("live_count", 13);
    at_least("peak_bytes", 5440);
    at_least("allocated_bytes", 1_472_500 + 5440 + 16 + 64);
}

#[test]
fn churn_has_no_user_leaks() {
    let dir = TestDir::new("churn_has_no_user_leaks");
    let prog = dir.compile("churn.c");
    let (out, report) = traced(&dir, &prog, &NO_ARGS);
    assert!(out.stdout.is_empty(), "{}", out.describe());
    let p = process_by_exe(&report, "churn");
    let funcs = [
        "churn_sizes",
        "churn_realloc",
        "churn_misc",
        "churn_keep_then_free",
    ];
    assert!(user_sites(p, "host", &funcs).is_empty(), "{}", dump(p));
    assert!(user_sites(p, "mmap", &funcs).is_empty(), "{}", dump(p));
}

#[test]
fn churn_heap_totals_exact() {
    let dir = TestDir::new("churn_heap_totals_exact");
    let prog = dir.compile("churn.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "churn");
    // Exact totals (see churn.c): the program calls no stdio, so every call is its own.
    let heap = &p["heap"];
    for (key, want) in [
        ("allocations", 3756),
        ("frees", 3756),
        ("allocated_bytes", 10_395_316),
        ("live_bytes", 0),
        ("live_count", 0),
    ] {
        assert_eq!(heap[key].as_u64(), Some(want), "heap.{key}: {heap}");
    }
}

#[test]
fn cpp_new_leaks() {
    let dir = TestDir::new("cpp_new_leaks");
    let prog = dir.compile("cpp_new.cpp");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "cpp_new");
    let funcs = ["leak_objects", "leak_array", "churn_objects"];
    assert_eq!(
        user_summary(p, "host", &funcs),
        expected(&[("leak_objects", 200, 5), ("leak_array", 400, 1)]),
        "\n{}",
        dump(p)
    );
    for func in ["leak_objects", "leak_array"] {
        let site = site_with(p, "host", func);
        let i = frame_index(site, func).expect("the user frame");
        assert!(
            i >= 1,
            "operator new should come before {func}: {:?}",
            functions(site)
        );
        for f in &functions(site)[..i] {
            assert!(
                f.starts_with("operator new"),
                "{func}: {f} is not a demangled operator new: {:?}",
                functions(site)
            );
        }
        assert_source_frame(site, i, func, "cpp_new.cpp");
        assert_source_frame(site, i + 1, "main", "cpp_new.cpp");
    }
}

#[test]
fn threads_leak_one_site() {
    let dir = TestDir::new("threads_leak_one_site");
    let prog = dir.compile_with("threads.c", "threads", &["-g", "-O0", "-pthread"]);
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "threads");
    assert_eq!(
        user_summary(p, "host", &["thread_leak"]),
        expected(&[("thread_leak", 40000, 40)]),
        "\n{}",
        dump(p)
    );
    let site = site_with(p, "host", "thread_leak");
    assert_source_frame(site, 0, "thread_leak", "threads.c");
    assert!(
        functions(site).contains(&"start_thread"),
        "{:?}",
        functions(site)
    );
    assert!(!functions(site).contains(&"main"), "{:?}", functions(site));
}

#[test]
fn nofp_frames_in_order() {
    let dir = TestDir::new("nofp_frames_in_order");
    let prog = dir.compile_with("nofp.c", "nofp", &["-O2", "-fomit-frame-pointer", "-g"]);
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "nofp");
    let funcs = ["inner_leak", "middle", "outer"];
    assert_eq!(
        user_summary(p, "host", &funcs),
        expected(&[("inner_leak", 539, 7)]),
        "\n{}",
        dump(p)
    );
    let site = site_with(p, "host", "inner_leak");
    for (i, func) in ["inner_leak", "middle", "outer", "main"]
        .into_iter()
        .enumerate()
    {
        assert_source_frame(site, i, func, "nofp.c");
    }
}

#[test]
fn mmap_leak_reported_as_mapping() {
    let dir = TestDir::new("mmap_leak_reported_as_mapping");
    let prog = dir.compile("mmap_leak.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "mmap_leak");
    let funcs = ["map_leak", "map_unmap"];
    assert_eq!(
        user_summary(p, "mmap", &funcs),
        expected(&[("map_leak", 12288, 1)]),
        "\n{}",
        dump(p)
    );
    assert!(user_sites(p, "host", &funcs).is_empty(), "{}", dump(p));
    let site = site_with(p, "mmap", "map_leak");
    assert_source_frame(site, 0, "map_leak", "mmap_leak.c");
    assert_source_frame(site, 1, "main", "mmap_leak.c");
    let mmap = &p["leaks"]["mmap"];
    assert!(mmap["bytes"].as_u64().is_some_and(|b| b >= 12288), "{mmap}");
}

#[test]
fn growing_leak_is_growth_and_one_time_leak_is_not() {
    let dir = TestDir::new("growing_leak_is_growth_and_one_time_leak_is_not");
    let prog = dir.compile("growing.c");
    let (_out, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "growing");
    let growth = p["growth"]["host"].as_array().expect("growth.host");
    let user: Vec<&serde_json::Value> = growth
        .iter()
        .filter(|g| {
            g["frames"].as_array().expect("frames").iter().any(|f| {
                ["step_leak", "load_table", "scratch"]
                    .contains(&f["function"].as_str().unwrap_or(""))
            })
        })
        .collect();
    assert_eq!(user.len(), 1, "{}", dump(p));
    let g = user[0];
    assert_eq!(g["frames"][0]["function"], "step_leak", "{}", dump(p));
    assert_eq!(g["from_bytes"], 102400);
    assert_eq!(g["to_bytes"], 2048000);
    assert_eq!(g["live_bytes"], 2048000);
    let rate = g["rate_bytes_per_s"].as_f64().expect("rate");
    // 19 increments of 100 KiB over about 19 x 20 ms: roughly 5 MB/s, well above zero.
    assert!(rate > 1e6 && rate < 1e7, "rate {rate}");
    assert_eq!(
        user_summary(p, "host", &["step_leak", "load_table"]),
        expected(&[("load_table", 4 << 20, 1), ("step_leak", 2048000, 20)])
    );
}

/// Runs `prog` under memshim with MEMSHIM_SAMPLE_BYTES=4096 and `events` as MEMSHIM_SAMPLE_EVENTS
/// (the default when `None`); returns the program's stdout, the report and the trace's alloc events.
fn sampled_run(
    name: &str,
    prog: &std::path::Path,
    events: Option<&str>,
) -> (String, serde_json::Value, u64) {
    let dir = TestDir::new(name);
    let mut cmd = memshim_cmd();
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(prog)
        .env("MEMSHIM_SAMPLE_BYTES", "4096");
    if let Some(e) = events {
        cmd.env("MEMSHIM_SAMPLE_EVENTS", e);
    }
    let out = run_ok(&mut cmd);
    let info = run_ok(
        memshim_cmd()
            .arg("info")
            .arg(&trace_files(&dir.traces())[0]),
    );
    let allocs = String::from_utf8_lossy(&info.stdout)
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("alloc ")
                .map(|n| n.trim().parse::<u64>())
        })
        .expect("an alloc count")
        .expect("a number");
    let report = report_json(&dir.traces());
    let p = process_by_exe(&report, "many_leaks").clone();
    (String::from_utf8_lossy(&out.stdout).into_owned(), p, allocs)
}

/// Thin sampling on threads: each thread counts in a slot of its own, claimed at its first call; the
/// totals summed over the slots are the full trace's.
#[test]
fn thin_sampling_counts_every_call_of_every_thread() {
    let dir = TestDir::new("thin_sampling_threads");
    let prog = dir.compile_with("threads.c", "threads", &["-g", "-O0", "-pthread"]);
    let (_, full) = traced(&dir, &prog, &NO_ARGS);
    let full = process_by_exe(&full, "threads").clone();
    let thin = TestDir::new("thin_sampling_threads_thin");
    run_ok(
        memshim_cmd()
            .args(["run", "--quiet", "-o"])
            .arg(thin.traces())
            .arg("--")
            .arg(&prog)
            .env("MEMSHIM_SAMPLE_BYTES", "4096"),
    );
    let report = report_json(&thin.traces());
    let p = process_by_exe(&report, "threads");
    assert_eq!(p["heap"]["totals_from"], "counts");
    for key in ["allocations", "frees", "allocated_bytes", "live_count"] {
        assert_eq!(p["heap"][key], full["heap"][key], "heap.{key}\n{}", dump(p));
    }
    assert!(
        full["heap"]["allocations"].as_u64() >= Some(40),
        "{}",
        dump(&full)
    );
}

/// `memshim run --sample 4K` is MEMSHIM_SAMPLE_BYTES=4096: the same sampling, the same exact totals.
#[test]
fn the_sample_flag_samples_as_the_environment_variable_does() {
    let prog_dir = TestDir::new("sample_flag");
    let prog = prog_dir.compile("many_leaks.c");
    let (_, by_env, _) = sampled_run("sample_flag_env", &prog, None);
    let dir = TestDir::new("sample_flag_flag");
    run_ok(
        memshim_cmd()
            .args(["run", "--quiet", "--sample", "4K", "-o"])
            .arg(dir.traces())
            .arg("--")
            .arg(&prog),
    );
    let report = report_json(&dir.traces());
    let by_flag = process_by_exe(&report, "many_leaks");
    assert_eq!(by_flag["sampling_bytes"], 4096);
    for key in ["allocations", "frees", "allocated_bytes", "live_count"] {
        assert_eq!(by_flag["heap"][key], by_env["heap"][key], "{key}");
    }
    assert_eq!(
        by_flag["leaks"]["host"]["bytes"],
        by_env["leaks"]["host"]["bytes"]
    );
}

/// Thin sampling, the production mode: only sampled allocations are events, every call is counted,
/// so the totals and the leak totals stay exact (live bytes as the allocator's usable sizes) while
/// the trace holds about one allocation in 55 (most of them the small churn: one byte in 4096 sampled).
#[test]
fn thin_sampling_counts_every_call_and_records_only_the_sampled() {
    let dir = TestDir::new("thin_sampling_counts_every_call");
    let prog = dir.compile("many_leaks.c");
    let (_, full) = traced(&dir, &prog, &NO_ARGS);
    let full = process_by_exe(&full, "many_leaks").clone();
    let (stdout, p, alloc_events) =
        sampled_run("thin_sampling_counts_every_call_sampled", &prog, None);
    let usable: u64 = stdout
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the program prints its leaked usable bytes");
    assert_eq!(p["heap"]["totals_from"], "counts");
    assert_eq!(full["heap"]["totals_from"], "events");
    for key in ["allocations", "frees", "allocated_bytes", "live_count"] {
        assert_eq!(p["heap"][key], full["heap"][key], "heap.{key}");
    }
    assert_eq!(full["heap"]["allocations"], 220_005);
    assert_eq!(p["heap"]["live_bytes"], usable);
    assert_eq!(p["leaks"]["host"]["bytes"], usable);
    assert_eq!(p["leaks"]["host"]["count"], 20_005);
    assert!(p["heap"]["peak_bytes"].as_u64().expect("peak") >= usable);
    // The host timeline is the counts' readings, the last of them at exit.
    let last = p["timeline"]["host_live"]
        .as_array()
        .and_then(|a| a.last())
        .expect("a host timeline");
    assert_eq!(last[1], usable, "{last}");
    // Each allocation is a draw of its own, with chance 1 - exp(-usable / 4096): glibc's usable
    // sizes on x86-64 are 104 B for the 20000 x 100 B and 72 B for churn_small's 200000 x 64 B
    // (which all reuse one address: sampled call by call, not all or none), and the five 1 MiB
    // blocks are always sampled. About 3991 events, 62.5 standard deviations: the bound is 8 of
    // them, so a run outside it is not chance.
    let chance = |usable: f64| 1.0 - (-usable / 4096.0).exp();
    let draws = [(20_000.0, chance(104.0)), (200_000.0, chance(72.0))];
    let mean: f64 = 5.0 + draws.iter().map(|(n, p)| n * p).sum::<f64>();
    let sd = draws
        .iter()
        .map(|(n, p)| n * p * (1.0 - p))
        .sum::<f64>()
        .sqrt();
    assert!(
        (alloc_events as f64 - mean).abs() < 8.0 * sd,
        "{alloc_events} allocation events, expected {mean:.0} +- {:.0}",
        8.0 * sd
    );
    let estimate = |func: &str| {
        let e = &site_with(&p, "host", func)["estimated"];
        (
            e["bytes"].as_u64().expect("bytes"),
            e["count"].as_u64().expect("count"),
        )
    };
    assert_eq!(estimate("leak_big").1, 5);
    assert!(estimate("leak_big").0.abs_diff(5 << 20) < 1024);
    let (many_bytes, _) = estimate("leak_many");
    assert!(many_bytes.abs_diff(2_000_000) < 400_000, "{many_bytes}");
    assert!(user_sites(&p, "host", &["churn_small"]).is_empty());
}

/// With MEMSHIM_SAMPLE_EVENTS=all every call is an event and only stacks are sampled: every total
/// is exact in requested bytes, peak included.
#[test]
fn sampling_keeps_totals_exact_and_estimates_sites() {
    let dir = TestDir::new("sampling_keeps_totals_exact_and_estimates_sites");
    let prog = dir.compile("many_leaks.c");
    let (_, full) = traced(&dir, &prog, &NO_ARGS);
    let full = process_by_exe(&full, "many_leaks").clone();
    let (_, p, alloc_events) = sampled_run(
        "sampling_keeps_totals_exact_and_estimates_sites_sampled",
        &prog,
        Some("all"),
    );
    let p = &p;
    assert_eq!(alloc_events, 220_005);
    assert_eq!(p["heap"]["totals_from"], "events");
    assert_eq!(p["sampling_bytes"], 4096);
    assert!(full["sampling_bytes"].is_null());
    for key in [
        "allocations",
        "frees",
        "allocated_bytes",
        "peak_bytes",
        "live_bytes",
    ] {
        assert_eq!(p["heap"][key], full["heap"][key], "heap.{key}");
    }
    assert_eq!(p["leaks"]["host"]["bytes"], full["leaks"]["host"]["bytes"]);
    assert_eq!(p["leaks"]["host"]["count"], full["leaks"]["host"]["count"]);
    assert!(
        p["leaks"]["host"]["unsampled_count"]
            .as_u64()
            .expect("unsampled")
            > 10000
    );
    let estimate = |func: &str| -> (u64, u64) {
        let s = site_with(p, "host", func);
        let e = &s["estimated"];
        (
            e["bytes"].as_u64().expect("bytes"),
            e["count"].as_u64().expect("count"),
        )
    };
    let (big_bytes, big_count) = estimate("leak_big");
    assert_eq!(big_count, 5);
    assert!(big_bytes.abs_diff(5 << 20) < 1024, "{big_bytes}");
    // About 490 sampled blocks stand for the 20000: within 20% (several standard deviations).
    let (many_bytes, _) = estimate("leak_many");
    assert!(many_bytes.abs_diff(2_000_000) < 400_000, "{many_bytes}");
    assert!(user_sites(p, "host", &["churn_small"]).is_empty());
}
