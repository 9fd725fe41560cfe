//! The first screen answers: the verdict opens every report, each process shows its memory at the
//! peak and what grew before its leaks and the rest; a shell-script launcher is named with the
//! command that traces the real program; `--program`/`--exclude` pick processes by command; the
//! Markdown report escapes `<`, `>` and `&` and keeps findings whole.
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::python::{interpreters, run_python};
use crate::report::report_json;
use crate::util::{examples_dir, memshim, memshim_cmd, run_ok, TestDir};

/// The 40 bytearrays of `grow_release.py`: 1 MiB and the terminating byte each.
const GROWN_BYTES: u64 = 40 * ((1 << 20) + 1);

/// `memshim report --format FORMAT ARGS... TRACES`; must succeed.
fn report_as(format: &str, traces: &Path, args: &[&str]) -> String {
    let mut all: Vec<&OsStr> = vec![
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new(format),
    ];
    all.extend(args.iter().map(OsStr::new));
    all.push(traces.as_os_str());
    let out = memshim(&all);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    out.stdout_str()
}

/// The first `n` lines of `text`.
fn head(text: &str, n: usize) -> Vec<&str> {
    text.lines().take(n).collect()
}

/// Runs `examples/python/grow_release.py` with the first interpreter found; its traces' directory.
fn grow_release(dir: &TestDir) -> PathBuf {
    let script = dir.path("grow_release.py");
    std::fs::copy(examples_dir().join("../python/grow_release.py"), &script)
        .expect("copy the script");
    let python = &interpreters()[0];
    run_python(dir, &dir.traces(), &[], python, &[script.as_os_str()], &[]);
    dir.traces()
}

#[test]
fn a_python_list_grown_and_released_leads_the_text_report_with_its_peak() {
    let dir = TestDir::new("first_screen_python_released");
    let traces = grow_release(&dir);
    let report = report_json(&traces);
    let v = &report["verdict"][0];
    assert_eq!(v["kind"], "released_growth", "{v}");
    assert_eq!(v["severity"], "medium");
    assert_eq!(v["bytes"], GROWN_BYTES);
    assert_eq!(v["site"], "grow (grow_release.py:13)");
    let p = &report["processes"][0];
    assert_eq!(p["heap"]["peak_sites"][0]["bytes"], GROWN_BYTES);
    assert_eq!(p["heap"]["peak_sites"][0]["count"], 40);
    let m = &p["program_memory"];
    assert!(m["heap_bytes"].as_u64().unwrap() >= GROWN_BYTES, "{m}");
    assert_eq!(
        m["bytes"].as_u64(),
        Some(m["heap_bytes"].as_u64().unwrap() + m["mapped_bytes"].as_u64().unwrap()),
        "no device memory: {m}"
    );

    let text = report_as("text", &traces, &[]);
    let lines = head(&text, 40);
    assert_eq!(
        lines[0], "verdict: 1 thing to act on, most at stake first",
        "{text}"
    );
    assert_eq!(lines[1], "  1. MEDIUM 40.0 MiB  released growth");
    assert!(
        lines[2].starts_with("     heap at grow (grow_release.py:13) grew from 1.0 MiB at ")
            && lines[2].contains(" s to 40.0 MiB at ")
            && lines[2].contains(" s and was given back at "),
        "{text}"
    );
    assert_eq!(
        lines[3],
        "     fix: the peak is what the machine must hold: build the data in pieces, stream it, or free each part as soon as it is used"
    );
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line `{prefix}` in the first 40:\n{text}"))
    };
    let header = at("== ");
    let peak = at("program memory at its peak: ");
    let held = at("      40.0 MiB in     40 blocks  grow (grow_release.py:13)");
    let released = at("released growth #1 (host): 1.0 MiB at ");
    let heap = at("heap: ");
    assert!(
        header < peak && peak < held && held < released && released < heap,
        "{text}"
    );
    assert!(lines[released].contains(" -> 40.0 MiB at "), "{text}");
}

#[test]
fn a_c_leak_is_the_verdict_and_the_peak_names_its_site() {
    let dir = TestDir::new("first_screen_c_leak");
    let prog = dir.compile("first_screen_leak.c");
    let (_out, report) = crate::util::traced(&dir, &prog, &[] as &[&str]);
    let v = &report["verdict"];
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v[0]["kind"], "leak");
    assert_eq!(v[0]["severity"], "medium");
    assert_eq!(v[0]["bytes"], (3 << 20) + 100);
    assert_eq!(v[0]["site"], "keep_records (first_screen_leak.c:14)");
    assert_eq!(v[0]["program"], "first_screen_leak");
    let text = report_as("text", &dir.traces(), &[]);
    let lines = head(&text, 12);
    assert_eq!(
        lines[..4],
        [
            "verdict: 1 thing to act on, most at stake first",
            "  1. MEDIUM 3.0 MiB  leak",
            "     3.0 MiB in 4 heap blocks from 2 sites never freed; the most at keep_records (first_screen_leak.c:14)",
            "     fix: free the blocks when done with them; if they are kept on purpose until exit, nothing is lost",
        ],
        "{text}"
    );
    let peak = lines
        .iter()
        .position(|l| {
            l.starts_with(
                "program memory at its peak: 3.0 MiB (heap 3.0 MiB + anonymous mappings 0 B at ",
            )
        })
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[peak + 1].starts_with("  held at the heap's peak (3.0 MiB at "),
        "{text}"
    );
    assert_eq!(
        lines[peak + 2],
        "       3.0 MiB in      3 blocks  keep_records (first_screen_leak.c:14)"
    );
    assert_eq!(
        lines[peak + 3],
        "         100 B in      1 block   keep_name (first_screen_leak.c:21)"
    );
    let json = report_as("json", &dir.traces(), &[]);
    let p: Value = crate::report::parse(json.as_bytes());
    assert_eq!(p["totals"]["leaked_host_bytes"], (3 << 20) + 100);
}

/// A `#!/usr/bin/env bash` launcher that execs `prog`, as pyenv's and conda's shims do.
fn launcher(dir: &TestDir, prog: &Path) -> PathBuf {
    let path = dir.path("launch");
    std::fs::write(
        &path,
        format!(
            "#!/usr/bin/env bash\n# a shim\nexec {} \"$@\"\n",
            prog.display()
        ),
    )
    .expect("write the launcher");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn a_shell_launcher_is_named_with_the_command_that_traces_the_program_and_filters_pick_it() {
    let dir = TestDir::new("first_screen_launcher");
    let prog = dir.compile("first_screen_leak.c");
    let shim = launcher(&dir, &prog);
    let out = run_ok(
        memshim_cmd()
            .args(["run", "-o"])
            .arg(dir.traces())
            .arg("--")
            .arg(&shim)
            .arg("--flag")
            .current_dir(&dir.root),
    );
    let real = std::fs::canonicalize(&prog).expect("the program");
    let want = format!(
        "memshim: note: {} is a bash script that starts another program, so its shell and helpers were traced too (3 traces); it ran {} in the end; to trace only that, run it directly: memshim run -- {} --flag",
        shim.display(),
        real.display(),
        real.display()
    );
    assert!(
        out.stderr_str().lines().any(|l| l == want),
        "want {want}\n{}",
        out.describe()
    );

    let text = report_as("text", &dir.traces(), &[]);
    let overview: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("pid "))
        .skip(1)
        .take(3)
        .map(|l| l.split_whitespace().nth(2).unwrap_or(""))
        .collect();
    assert_eq!(overview, ["env", "bash", "first_screen_leak"], "{text}");
    let commands: Vec<String> = report_json(&dir.traces())["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| p["command"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(commands, ["env bash", "bash launch", "first_screen_leak"]);
    assert!(
        text.lines().any(|l| l.starts_with("total: 3 processes, ")),
        "{text}"
    );

    let headers = |args: &[&str]| -> Vec<String> {
        report_as("text", &dir.traces(), args)
            .lines()
            .filter(|l| l.starts_with("== "))
            .map(|l| l.split("  (pid").next().unwrap_or("").to_string())
            .collect()
    };
    let real_header = format!("== {} --flag", prog.display());
    assert_eq!(
        headers(&["--program", "first_screen_leak"]),
        std::slice::from_ref(&real_header)
    );
    assert_eq!(
        headers(&["--exclude", "env", "--exclude", "bash"]),
        [real_header]
    );
    assert_eq!(headers(&["--program", "bash launch"]).len(), 1);
    let filtered: Value = crate::report::parse(
        report_as("json", &dir.traces(), &["--program", "first_screen_leak"]).as_bytes(),
    );
    assert_eq!(filtered["totals"]["processes"], 1);
    assert_eq!(filtered["verdict"][0]["program"], "first_screen_leak");
    let none = memshim(&[
        OsStr::new("report"),
        OsStr::new("--program"),
        OsStr::new("nothing-here"),
        dir.traces().as_os_str(),
    ]);
    assert_eq!(none.status.code(), Some(1), "{}", none.describe());
    assert!(
        none.stderr_str()
            .contains("--program/--exclude left no process: the traces here are of env bash, bash launch, first_screen_leak"),
        "{}",
        none.describe()
    );
}

#[test]
fn pyenvs_python3_shim_is_named_with_the_interpreter_it_runs() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let shim = Path::new(&home).join(".pyenv/shims/python3");
    if !shim.is_file() {
        eprintln!("no pyenv shim at {}: nothing to check", shim.display());
        return;
    }
    let dir = TestDir::new("first_screen_pyenv");
    let out = run_ok(
        memshim_cmd()
            .args(["run", "-o"])
            .arg(dir.traces())
            .args(["--", "python3", "-c", "pass"])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(&dir.root),
    );
    // The interpreter the shim runs, as its process's executable reads: sys.executable resolved.
    let exe = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let real =
        std::fs::canonicalize(String::from_utf8_lossy(&exe.stdout).trim()).expect("its path");
    let err = out.stderr_str();
    let line = err
        .lines()
        .find(|l| {
            l.starts_with("memshim: note: python3 is a bash script that starts another program")
        })
        .unwrap_or_else(|| panic!("{}", out.describe()));
    assert!(
        line.ends_with(&format!(
            "; it ran {} in the end; to trace only that, run it directly: memshim run -- {} -c pass (`pyenv which python3` names it)",
            real.display(),
            real.display()
        )),
        "{line}"
    );
}

#[test]
fn markdown_escapes_angle_brackets_and_ampersands_and_keeps_findings_whole() {
    let dir = TestDir::new("first_screen_markdown");
    let src = dir.path("odd<name>&.c");
    std::fs::copy(examples_dir().join("first_screen_leak.c"), &src).expect("copy");
    let prog = dir.path("odd");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = std::process::Command::new(&cc)
        .args(["-g", "-O0", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .expect("the C compiler runs");
    assert!(status.success());
    crate::util::memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let md = report_as("markdown", &dir.traces(), &[]);
    assert!(
        md.contains("`keep_records` (odd&lt;name&gt;&amp;.c:14)"),
        "{md}"
    );
    assert!(!md.contains("odd<name>"), "{md}");
    assert!(
        md.contains("\n## Verdict\n\n1. **medium** 3.0 MiB leak in `odd` (pid "),
        "{md}"
    );
    assert!(
        md.contains("): 3.0 MiB in 4 heap blocks from 2 sites never freed; the most at keep_records (odd&lt;name&gt;&amp;.c:14)  \n   *Fix:* free the blocks"),
        "{md}"
    );

    let dir = TestDir::new("first_screen_markdown_python");
    let traces = grow_release(&dir);
    let md = report_as("markdown", &traces, &[]);
    let finding = md
        .lines()
        .find(|l| l.starts_with("- host memory at grow ("))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        finding.contains("grow_release.py:13) grew from 1.0 MiB at ")
            && finding.contains(" and was given back at "),
        "the finding is whole: {finding}"
    );
    assert!(md.contains("### Growth given back before the end"), "{md}");
    assert!(!md.contains("<frozen"), "{md}");
}
