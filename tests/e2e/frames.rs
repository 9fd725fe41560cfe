//! What a site's stack shows and whose memory it is: the program's own frames first (start-up,
//! import machinery and interpreter frames only in JSON or with `--all-frames`), unnamed frames as
//! `module+0xoffset` that stay the same from run to run, the C library's one-time buffers apart
//! from the program's leaks, and LeakSanitizer-format suppressions honoured by the report and the
//! gate, with exact bytes.
use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::python::{interpreters, run_python};
use crate::report::{frames, process_by_exe, report_json, sites};
use crate::util::*;

/// leaky.c's own leaks (its header lists them): 5440 bytes in 13 blocks from 8 sites.
const NO_ARGS: [&str; 0] = [];
const LEAKY_BYTES: u64 = 5440;
const LEAKY_BLOCKS: u64 = 13;

fn report_text(traces: &Path, extra: &[&str]) -> String {
    let mut args = vec![OsStr::new("report")];
    args.extend(extra.iter().map(OsStr::new));
    args.push(traces.as_os_str());
    let out = memshim(&args);
    assert!(out.status.success(), "{}", out.describe());
    out.stdout_str()
}

fn own_bytes(host: &Value) -> u64 {
    let n = |k: &str| host[k].as_u64().unwrap_or_else(|| panic!("{k} in {host}"));
    n("bytes") - n("driver_bytes") - n("by_design_bytes") - n("suppressed_bytes")
}

/// The first frame line under each numbered site of a text report, with the site's line.
fn first_frames(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].trim_start().starts_with('#'))
        .map(|w| (w[0].trim().to_string(), w[1].trim().to_string()))
        .collect()
}

#[test]
fn the_c_librarys_stdio_buffer_is_by_design_not_a_leak() {
    let dir = TestDir::new("frames_stdio_by_design");
    let prog = dir.compile("leaky.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "leaky");
    let host = &p["leaks"]["host"];
    let libc: Vec<&Value> = sites(p, "host")
        .iter()
        .filter(|s| s["owner"] == "c_library")
        .collect();
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
fn start_up_frames_are_left_out_unless_all_frames_is_given() {
    let dir = TestDir::new("frames_hidden_by_default");
    let prog = dir.compile("leaky.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "leaky");
    // JSON keeps every frame, the start-up ones marked.
    let site = &sites(p, "host")[0];
    let start = frames(site)
        .iter()
        .find(|f| f["function"] == "_start")
        .unwrap_or_else(|| panic!("no _start in {site:#}"));
    assert_eq!(start["hidden"], "startup");
    assert!(
        start["offset"].as_str().unwrap().starts_with("0x"),
        "{start}"
    );

    let text = report_text(&dir.traces(), &[]);
    let shows = |text: &str, func: &str| text.lines().any(|l| l.trim_start().starts_with(func));
    assert!(!shows(&text, "_start"), "{text}");
    assert!(!text.contains("__libc_start"), "{text}");
    let first = first_frames(&text);
    assert_eq!(
        first[0],
        (
            "#1  4.0 KiB in 1 block (of 1 allocated here)".into(),
            "leak_aligned  leaky.c:52".into()
        ),
        "{text}"
    );
    let all = report_text(&dir.traces(), &["--all-frames"]);
    assert!(all.contains("        _start  (leaky+0x"), "{all}");
    assert!(all.contains("__libc_start_call_main"), "{all}");
    let md = report_text(&dir.traces(), &["--format", "markdown"]);
    assert!(!md.contains("`_start`"), "{md}");
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
    let report: Value = serde_json::from_str(&out.stdout_str()).unwrap();
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
fn unnamed_frames_are_module_offsets_the_same_in_every_run() {
    let dir = TestDir::new("frames_module_offsets");
    let prog = dir.compile("leaky.c");
    let stripped = dir.path("leaky_stripped");
    let status = std::process::Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&prog)
        .status()
        .expect("strip runs");
    assert!(status.success());
    let mut texts = Vec::new();
    let mut offsets = Vec::new();
    for run in ["a", "b"] {
        let traces = dir.path(run);
        let mut cmd = memshim_cmd();
        cmd.args(["run", "--quiet", "-o"])
            .arg(&traces)
            .arg("--")
            .arg(&stripped)
            .current_dir(&dir.root);
        run_ok(&mut cmd);
        let report = report_json(&traces);
        let p = process_by_exe(&report, "leaky_stripped");
        // The largest site of the program, posix_memalign's 4096 bytes, in the stripped `leak_aligned`.
        let site = &sites(p, "host")[0];
        let own = frames(site)
            .iter()
            .find(|f| f["function"].is_null())
            .unwrap_or_else(|| panic!("no unnamed frame in {site:#}"));
        assert!(
            own["module"].as_str().unwrap().ends_with("/leaky_stripped"),
            "{own}"
        );
        offsets.push(own["offset"].as_str().unwrap().to_string());
        texts.push(
            first_frames(&report_text(&traces, &[]))
                .into_iter()
                .map(|(_, f)| f)
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(offsets[0], offsets[1]);
    assert_eq!(texts[0], texts[1]);
    assert!(
        texts[0].contains(&format!("leaky_stripped+{}", offsets[0])),
        "{:?}",
        texts[0]
    );
    assert!(
        texts[0]
            .iter()
            .all(|f| !f.contains("0x5") && !f.contains("0x7f")),
        "{:?}",
        texts[0]
    );
}

#[test]
fn a_python_sites_first_frame_is_the_scripts_line() {
    let python = &interpreters()[0];
    let dir = TestDir::new("frames_python_first_line");
    std::fs::create_dir_all(dir.path("pkg")).unwrap();
    std::fs::write(dir.path("pkg/__init__.py"), "").unwrap();
    std::fs::write(dir.path("pkg/held.py"), "BLOCK = bytearray(3000017)\n").unwrap();
    std::fs::write(
        dir.path("frames_script.py"),
        "import os\nimport pkg.held\nkept = []\n\n\ndef keep():\n    kept.append(bytearray(5000011))\n\n\nkeep()\nos._exit(0)\n",
    )
    .unwrap();
    run_python(
        &dir,
        &dir.traces(),
        &[],
        python,
        &[OsStr::new("frames_script.py")],
        &[],
    );
    let text = report_text(&dir.traces(), &[]);
    let first = first_frames(&text);
    let line = |bytes: &str| {
        first
            .iter()
            .find(|(site, _)| site.contains(bytes))
            .map(|(_, f)| f.as_str())
            .unwrap_or_else(|| panic!("no site of {bytes} in\n{text}"))
    };
    assert_eq!(
        line("4.8 MiB in 1 block"),
        "keep  frames_script.py:7",
        "{text}"
    );
    assert_eq!(
        line("2.9 MiB in 1 block"),
        "<module>  pkg/held.py:1",
        "{text}"
    );
    assert!(!text.contains("<frozen importlib"), "{text}");
    assert!(!text.contains("_PyEval_EvalFrameDefault"), "{text}");
    let all = report_text(&dir.traces(), &["--all-frames"]);
    assert!(all.contains("<frozen importlib._bootstrap>"), "{all}");

    let report = report_json(&dir.traces());
    let exe = python.file_name().unwrap().to_string_lossy().into_owned();
    let p = process_by_exe(&report, &exe);
    let imported = sites(p, "host")
        .iter()
        .find(|s| {
            s["bytes"]
                .as_u64()
                .is_some_and(|b| (3000017..3000100).contains(&b))
        })
        .unwrap_or_else(|| panic!("no import site in {p:#}"));
    let py: Vec<&Value> = frames(imported)
        .iter()
        .filter(|f| f["kind"] == "python")
        .collect();
    assert_eq!(py[0]["short_file"], "pkg/held.py");
    assert!(
        py[0]["file"].as_str().unwrap().ends_with("/pkg/held.py"),
        "{}",
        py[0]
    );
    assert!(
        py[0]["file"].as_str().unwrap().starts_with('/'),
        "{}",
        py[0]
    );
    let import_frames: Vec<&&Value> = py
        .iter()
        .filter(|f| {
            f["file"]
                .as_str()
                .unwrap_or("")
                .starts_with("<frozen importlib")
        })
        .collect();
    assert!(!import_frames.is_empty(), "{imported:#}");
    assert!(
        import_frames.iter().all(|f| f["hidden"] == "import"),
        "{imported:#}"
    );
}
