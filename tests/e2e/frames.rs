//! What a site's stack shows: the program's own frames first (start-up, import machinery and
//! interpreter frames only in JSON or with `--all-frames`), Python files named from their package
//! or the script's directory, unnamed frames as `module+0xoffset` that stay the same from run to
//! run, and `diff` matching Python sites by their Python frames above a noise threshold.
use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::python::{interpreters, run_python};
use crate::report::{frames, process_by_exe, report_json, sites};
use crate::util::*;

/// No arguments for the program.
pub(crate) const NO_ARGS: [&str; 0] = [];

pub(crate) fn report_text(traces: &Path, extra: &[&str]) -> String {
    let mut args = vec![OsStr::new("report")];
    args.extend(extra.iter().map(OsStr::new));
    args.push(traces.as_os_str());
    let out = memshim(&args);
    assert!(out.status.success(), "{}", out.describe());
    out.stdout_str()
}

/// The first frame line under each numbered site of a text report, with the site's line.
pub(crate) fn first_frames(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].trim_start().starts_with('#'))
        .map(|w| (w[0].trim().to_string(), w[1].trim().to_string()))
        .collect()
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
    assert_eq!(imported["owner"], "program");
    // What CPython allocated while it started is its own, by design; the script's lines are not.
    let host = &p["leaks"]["host"];
    let start_up: Vec<&Value> = sites(p, "host")
        .iter()
        .filter(|s| s["owner"] == "interpreter")
        .collect();
    assert!(!start_up.is_empty(), "{host:#}");
    let by_design: u64 = sites(p, "host")
        .iter()
        .filter(|s| ["interpreter", "c_library"].contains(&s["owner"].as_str().unwrap()))
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(host["by_design_bytes"].as_u64(), Some(by_design));
    assert!(
        start_up.iter().all(|s| frames(s).iter().all(|f| !f["file"]
            .as_str()
            .unwrap_or("")
            .ends_with("frames_script.py"))),
        "{start_up:#?}"
    );
}

#[test]
fn diff_goes_by_python_frames_and_leaves_small_changes_out() {
    let python = &interpreters()[0];
    let dir = TestDir::new("frames_diff_python");
    let script = |n: u32| {
        format!("import os\nkept = []\n\n\ndef keep():\n    for _ in range({n}):\n        kept.append(bytearray(100003))\n\n\ndef tag():\n    kept.append(bytearray({}))\n\n\nkeep()\ntag()\nos._exit(0)\n", 600 + 8 * n)
    };
    for (run, n) in [("before", 3), ("after", 1)] {
        std::fs::write(dir.path("diffed.py"), script(n)).unwrap();
        let traces = dir.path(run);
        run_python(&dir, &traces, &[], python, &[OsStr::new("diffed.py")], &[]);
    }
    let diff = |extra: &[&str]| {
        let mut cmd = memshim_cmd();
        cmd.arg("diff")
            .args(extra)
            .arg(dir.path("before"))
            .arg(dir.path("after"));
        run_ok(&mut cmd).stdout_str()
    };
    let json: Value =
        serde_json::from_str(&diff(&["--format", "json", "--min-bytes", "4K"])).unwrap();
    let changed = json["processes"][0]["sites"].as_array().unwrap();
    // One site changed by 4 KiB or more: two bytearrays of 100003 bytes (100004 with their
    // terminator) fewer, named by the script's frames.
    assert_eq!(changed.len(), 1, "{json:#}");
    assert_eq!(changed[0]["bytes"]["delta"], -200008, "{json:#}");
    assert_eq!(changed[0]["count"]["before"], 3);
    assert_eq!(changed[0]["count"]["after"], 1);
    assert_eq!(
        changed[0]["functions"],
        serde_json::json!(["keep (diffed.py)", "<module> (diffed.py)"])
    );
    let md = diff(&["--format", "markdown", "--min-bytes", "4K"]);
    assert!(md.starts_with("# memshim diff\n"), "{md}");
    assert!(
        md.contains("| host | 293.0 KiB -> 97.7 KiB (-195.3 KiB) | 3 -> 1 | `keep (diffed.py) <- <module> (diffed.py)` |"),
        "{md}"
    );
}

#[test]
fn the_growth_finding_names_the_line_that_grew() {
    let dir = TestDir::new("frames_growth_line");
    let prog = dir.compile("growing.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "growing");
    let text = p["growth"]["findings"][0]["text"]
        .as_str()
        .unwrap_or_default();
    // growing.c's header: step_leak climbs from 102400 B to 2048000 B and keeps it all.
    assert!(
        text.starts_with(
            "1 call site kept growing their host heap until the end; the fastest, step_leak (growing.c:18), went from 100.0 KiB to 2.0 MiB at "
        ) && text.ends_with("/s and still holds 2.0 MiB"),
        "{text}"
    );
}
