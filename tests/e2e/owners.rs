//! Whose memory a leak is: the C library's stdio buffer and the C++ runtime's emergency pool are
//! allocated once by design, reported apart from the program's leaks and not counted by the gate;
//! LeakSanitizer-format suppressions set named leaks apart with their rule and exact bytes, in
//! `report`, `run` and the gate.
use std::ffi::OsStr;

use serde_json::Value;

use crate::frames::{report_text, NO_ARGS};
use crate::report::{frames, process_by_exe, sites};
use crate::util::*;

/// leaky.c's own leaks (its header lists them): 5440 bytes in 13 blocks from 8 sites.
const LEAKY_BYTES: u64 = 5440;
const LEAKY_BLOCKS: u64 = 13;

/// The host leak sites of process `p` whose owner is `owner`.
fn host_sites_of<'a>(p: &'a Value, owner: &str) -> Vec<&'a Value> {
    sites(p, "host")
        .iter()
        .filter(|s| s["owner"] == owner)
        .collect()
}

/// The program's own leaked bytes of a leak class.
fn own_bytes(host: &Value) -> u64 {
    let n = |k: &str| host[k].as_u64().unwrap_or_else(|| panic!("{k} in {host}"));
    n("bytes") - n("driver_bytes") - n("by_design_bytes") - n("suppressed_bytes")
}

#[test]
fn the_c_librarys_stdio_buffer_is_by_design_not_a_leak() {
    let dir = TestDir::new("frames_stdio_by_design");
    let prog = dir.compile("leaky.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "leaky");
    let host = &p["leaks"]["host"];
    let libc: Vec<&Value> = host_sites_of(p, "c_library");
    // stdout is a pipe here: glibc gives it a buffer of the pipe's block size, 4096 bytes.
    assert_eq!(libc.len(), 1, "{host:#}");
    assert_eq!(
        (libc[0]["bytes"].as_u64(), libc[0]["count"].as_u64()),
        (Some(4096), Some(1))
    );
    assert!(
        frames(libc[0]).iter().any(|f| f["function"]
            .as_str()
            .unwrap_or("")
            .ends_with("_IO_file_doallocate")),
        "{:#}",
        libc[0]
    );
    assert_eq!(host["by_design_bytes"], 4096);
    assert_eq!(host["by_design_count"], 1);
    assert_eq!(own_bytes(host), LEAKY_BYTES);

    let text = report_text(&dir.traces(), &[]);
    assert!(
        text.contains("leaked heap: 5.3 KiB in 13 blocks from 8 sites\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "  plus 4.0 KiB in 1 block allocated once by design by the C library: 1 site, the largest in _IO_file_doallocate\n"
        ),
        "{text}"
    );
    assert!(
        !text.contains("_IO_file_doallocate  "),
        "listed as a leak:\n{text}"
    );
    // The gate counts the program's leaks only.
    let gate = |limit: &str| {
        memshim(&[
            OsStr::new("report"),
            OsStr::new("--fail-on"),
            OsStr::new(limit),
            dir.traces().as_os_str(),
        ])
    };
    assert_eq!(
        gate(&format!("leaked-heap={LEAKY_BYTES}")).status.code(),
        Some(0)
    );
    let broken = gate(&format!("leaked-heap={}", LEAKY_BYTES - 1));
    assert_eq!(broken.status.code(), Some(3), "{}", broken.describe());
    assert!(
        broken
            .stderr_str()
            .contains("broken: 5.3 KiB leaked on the heap, 1 B over;"),
        "{}",
        broken.describe()
    );
}

#[test]
fn the_cxx_runtimes_emergency_pool_is_by_design() {
    let dir = TestDir::new("frames_cxx_pool");
    let prog = dir.compile("cpp_new.cpp");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "cpp_new");
    let host = &p["leaks"]["host"];
    let pool: Vec<&Value> = host_sites_of(p, "cxx_runtime");
    // libstdc++ allocates its pool once, from its own initialiser, whatever the program does.
    assert_eq!(pool.len(), 1, "{host:#}");
    assert_eq!(pool[0]["count"], 1);
    assert_eq!(host["by_design_bytes"], pool[0]["bytes"]);
    // The program's own: cpp_new.cpp's header, 200 + 400 bytes in 6 blocks.
    assert_eq!(own_bytes(host), 600, "{host:#}");
    let text = report_text(&dir.traces(), &[]);
    assert!(
        text.contains("leaked heap: 600 B in 6 blocks from 2 sites\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "allocated once by design by the C++ runtime (its emergency exception pool): 1 site"
        ),
        "{text}"
    );
}

#[test]
fn suppressions_set_named_leaks_apart_with_exact_bytes_and_the_gate_honours_them() {
    let dir = TestDir::new("frames_suppressions");
    let prog = dir.compile("leaky.c");
    let supp = dir.path("leaks.supp");
    std::fs::write(
        &supp,
        "# leaky's known leaks\nleak:leak_calloc\n\n  leak:^leak_str*  \n",
    )
    .unwrap();
    let supp_arg = supp.to_str().unwrap();
    // `run` reads the rules and gates with them: 100 + 12 bytes set apart.
    let mut cmd = memshim_cmd();
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .args(["--suppressions", supp_arg])
        .arg("--fail-on")
        .arg(format!("leaked-heap={}", LEAKY_BYTES - 112))
        .arg("--")
        .arg(&prog)
        .current_dir(&dir.root);
    let run = run_command(&mut cmd);
    assert_eq!(run.status.code(), Some(0), "{}", run.describe());

    let out = memshim(&[
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new("--suppressions"),
        supp.as_os_str(),
        dir.traces().as_os_str(),
    ]);
    assert!(out.status.success(), "{}", out.describe());
    let report: Value = crate::report::parse(&out.stdout);
    let p = process_by_exe(&report, "leaky");
    let host = &p["leaks"]["host"];
    assert_eq!(host["suppressed_bytes"], 112, "{host:#}");
    assert_eq!(host["suppressed_count"], 5);
    assert_eq!(own_bytes(host), LEAKY_BYTES - 112);
    let by_rule: Vec<(&str, u64)> = sites(p, "host")
        .iter()
        .filter_map(|s| Some((s["suppressed_by"].as_str()?, s["bytes"].as_u64()?)))
        .collect();
    let rule = |pattern: &str, line: u32| format!("leak:{pattern} ({supp_arg}:{line})");
    assert_eq!(
        by_rule,
        [
            (rule("leak_calloc", 2).as_str(), 100),
            (rule("^leak_str*", 4).as_str(), 12)
        ]
    );
    let text = report_text(&dir.traces(), &["--suppressions", supp_arg]);
    assert!(
        text.contains(&format!(
            "leaked heap: 5.2 KiB in {} blocks from 6 sites\n",
            LEAKY_BLOCKS - 5
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  plus 100 B in 4 blocks suppressed by {}: 1 site\n",
            rule("leak_calloc", 2)
        )),
        "{text}"
    );
    let gate = |limit: u64| {
        memshim(&[
            OsStr::new("report"),
            OsStr::new("--suppressions"),
            supp.as_os_str(),
            OsStr::new("--fail-on"),
            OsStr::new(&format!("leaked-heap={limit}")),
            dir.traces().as_os_str(),
        ])
    };
    assert_eq!(gate(LEAKY_BYTES - 112).status.code(), Some(0));
    assert_eq!(gate(LEAKY_BYTES - 113).status.code(), Some(3));

    // A bad line is named by file and line, before anything runs.
    let bad = dir.path("bad.supp");
    std::fs::write(&bad, "leak:ok\nleak_malloc\n").unwrap();
    let mut cmd = memshim_cmd();
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.path("never"))
        .args([
            "--suppressions",
            bad.to_str().unwrap(),
            "--fail-on",
            "growth",
            "--",
        ])
        .arg(&prog);
    let refused = run_command(&mut cmd);
    assert_eq!(refused.status.code(), Some(1), "{}", refused.describe());
    assert!(
        refused.stderr_str().contains(&format!(
            "{}:2: `leak_malloc` is not a suppression: write `leak:PATTERN`",
            bad.display()
        )),
        "{}",
        refused.describe()
    );
    assert!(!dir.path("never").exists(), "the command ran");
}

#[test]
fn a_rust_programs_leaks_are_named_past_the_standard_library() {
    let dir = TestDir::new("owners_rust");
    let prog = dir.compile_rust("leaky.rs");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "leaky");
    let host = &p["leaks"]["host"];
    // leaky.rs's header: the Vec's last buffer (1024 u64) and the String, both the program's.
    let own: Vec<&Value> = host_sites_of(p, "program");
    assert_eq!(own.len(), 2, "{host:#}");
    assert_eq!(own[0]["bytes"], 8192, "{:#}", own[0]);
    assert_eq!(
        own_bytes(host),
        8192 + own[1]["bytes"].as_u64().unwrap_or(0)
    );
    // What the runtime set up before main (the stack-overflow handler's records) is its own.
    let runtime: Vec<&Value> = host_sites_of(p, "rust_runtime");
    assert!(!runtime.is_empty(), "{host:#}");
    assert!(runtime
        .iter()
        .all(|s| frames(s).iter().any(|f| f["function"] == "std::rt::init")));

    let text = report_text(&dir.traces(), &[]);
    assert!(
        text.contains("from 2 sites never freed; the most at leaky::load (leaky.rs:14)\n"),
        "{text}"
    );
    assert!(text.contains("leaky::greet (leaky.rs:21)"), "{text}");
    assert!(
        text.contains("allocated once by design by the Rust runtime at start-up"),
        "{text}"
    );
}
