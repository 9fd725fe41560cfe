//! Python frames: `examples/python/leaks/python_leaks.py` leaks from named functions through ctypes'
//! malloc, a bytearray, a C extension and a thread; every CPython 3.9-3.14 found on the machine runs
//! it under `memshim run`, and each leak site must name the function, file and line exactly.
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::report::{bytes_count, dump, frames, process_by_exe, report_json, sites};
use crate::util::{memshim_cmd, run_ok, Outcome, TestDir};

fn leaks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python/leaks")
}

/// The CPython interpreters to test: `python3` on PATH, every pyenv 3.9-3.14, and the 3.14 that
/// `scripts/python314.sh` puts into `~/.cache/memshim/python3.14`, each by the real path of its
/// executable (pyenv's `python3` is a shell script that runs several processes).
pub(crate) fn interpreters() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let real = |cmd: &Path| -> Option<PathBuf> {
        let out = Command::new(cmd)
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let p = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !p.is_empty())
            .then(|| std::fs::canonicalize(&p).ok())
            .flatten()
    };
    if let Some(p) = real(Path::new("python3")) {
        found.push(p);
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    if let Some(Ok(entries)) = root.map(|r| std::fs::read_dir(r.join("versions"))) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let minor: Option<u32> = name
                .strip_prefix("3.")
                .and_then(|r| r.split('.').next())
                .and_then(|m| m.parse().ok());
            if let Some(m) = minor.filter(|m| (9..=14).contains(m)) {
                let exe = e.path().join("bin").join(format!("python3.{m}"));
                if let Some(p) = real(&exe) {
                    found.push(p);
                }
            }
        }
    }
    found.sort();
    found.dedup();
    assert!(!found.is_empty(), "no python3 on PATH: CI installs one");
    // Last, so that the tests that take the first interpreter keep the one they had.
    let cached = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/memshim/python3.14/bin/python3.14"));
    if let Some(p) = cached.as_deref().and_then(real) {
        if !found.contains(&p) {
            found.push(p);
        }
    }
    found
}

/// `memshim run --quiet -o <traces> <flags> -- <python> <args>` in `dir`, with `env` set and no
/// bytecode files written next to the scripts; it must exit 0.
pub(crate) fn run_python(
    dir: &TestDir,
    traces: &Path,
    flags: &[&str],
    python: &Path,
    args: &[&OsStr],
    env: &[(&str, &OsStr)],
) -> Outcome {
    let mut cmd = memshim_cmd();
    cmd.args(["run", "--quiet", "-o"])
        .arg(traces)
        .args(flags)
        .arg("--")
        .arg(python)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&dir.root);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_ok(&mut cmd)
}

/// Builds the `heldext` C extension for `python` into `dir`.
fn build_extension(python: &Path, dir: &Path) {
    let out = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))",
        ])
        .output()
        .expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let (include, suffix) = (lines.next().unwrap_or(""), lines.next().unwrap_or(".so"));
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-g", "-O1"])
        .arg(format!("-I{include}"))
        .arg(leaks_dir().join("heldext.c"))
        .arg("-o")
        .arg(dir.join(format!("heldext{suffix}")))
        .status()
        .expect("the C compiler runs");
    assert!(
        status.success(),
        "building heldext for {} failed (are its headers installed?)",
        python.display()
    );
}

/// Runs the leaks script with `python` under `memshim run` and returns its process's report.
fn run_script(python: &Path, test: &str, env: &[(&str, &str)]) -> (Value, TestDir) {
    let dir = TestDir::new(test);
    build_extension(python, &dir.root);
    std::fs::copy(
        leaks_dir().join("python_leaks.py"),
        dir.root.join("python_leaks.py"),
    )
    .expect("copy the script");
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, OsStr::new(v))).collect();
    run_python(
        &dir,
        &dir.traces(),
        &[],
        python,
        &[OsStr::new("python_leaks.py")],
        &env,
    );
    let report = report_json(&dir.traces());
    let exe = python.file_name().unwrap().to_string_lossy().into_owned();
    let p = process_by_exe(&report, &exe).clone();
    (p, dir)
}

/// The Python frames of a site as (function, file name, line), innermost first.
pub(crate) fn python_frames(site: &Value) -> Vec<(String, String, u64)> {
    frames(site)
        .iter()
        .filter(|f| f["kind"] == "python")
        .map(|f| {
            let file = f["file"].as_str().unwrap_or("?");
            (
                f["function"].as_str().unwrap_or("?").to_string(),
                file.rsplit('/').next().unwrap_or(file).to_string(),
                f["line"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The one host leak site whose innermost Python frame is `func`.
fn site_in<'a>(p: &'a Value, func: &str) -> &'a Value {
    let found: Vec<&Value> = sites(p, "host")
        .iter()
        .filter(|s| python_frames(s).first().is_some_and(|f| f.0 == func))
        .collect();
    assert_eq!(found.len(), 1, "one site in {func}:\n{}", dump(p));
    found[0]
}

fn here(func: &str, line: u64) -> (String, String, u64) {
    (func.to_string(), "python_leaks.py".to_string(), line)
}

#[test]
fn leak_sites_name_the_python_function_file_and_line_on_every_cpython() {
    for python in interpreters() {
        let name = python.file_name().unwrap().to_string_lossy().into_owned();
        let (p, _dir) = run_script(&python, &format!("python_frames_{name}"), &[]);
        let what = format!("{}", python.display());
        assert_eq!(p["python"]["frames"], true, "{what}: {}", p["python"]);
        let module = here("<module>", 53);

        let s = site_in(&p, "ctypes_leak");
        assert_eq!(bytes_count(s), (3 * 70001, 3), "{what}");
        let want = vec![here("ctypes_leak", 25), here("main", 43), module.clone()];
        assert_eq!(python_frames(s), want, "{what}");

        let s = site_in(&p, "bytearray_leak");
        // bytearray keeps room for a trailing NUL.
        assert_eq!(bytes_count(s), (2_000_004, 1), "{what}");
        let want = vec![here("bytearray_leak", 29), here("main", 44), module.clone()];
        assert_eq!(python_frames(s), want, "{what}");

        let s = site_in(&p, "ext_leak");
        assert_eq!(bytes_count(s), (2 * 30011, 2), "{what}");
        let want = vec![here("ext_leak", 34), here("main", 45), module.clone()];
        assert_eq!(python_frames(s), want, "{what}");
        // The native frames stay, above the Python frame that called them.
        let f = &frames(s)[0];
        assert_eq!(
            (&f["kind"], &f["function"]),
            (&"native".into(), &"ext_hold".into())
        );
        assert!(f["file"].as_str().is_some_and(|f| f.ends_with("heldext.c")));

        let s = site_in(&p, "thread_leak");
        assert_eq!(bytes_count(s), (2 * 50007, 2), "{what}");
        let py = python_frames(s);
        assert_eq!(py[0], here("thread_leak", 39), "{what}");
        let names: Vec<String> = py.iter().map(|f| f.0.clone()).collect();
        // Qualified names since 3.11.
        let class = if names.iter().any(|n| n == "Thread.run") {
            "Thread."
        } else {
            ""
        };
        let tail: Vec<String> = ["run", "_bootstrap_inner", "_bootstrap"]
            .iter()
            .map(|n| format!("{class}{n}"))
            .collect();
        assert!(
            names.ends_with(&tail),
            "{what}: the thread's frames end in threading's bootstrap: {names:?}"
        );
        assert!(
            py[1..].iter().all(|f| f.1 == "threading.py"),
            "{what}: {py:?}"
        );
    }
}

#[test]
fn python_frames_can_be_turned_off_and_the_report_says_so() {
    let python = &interpreters()[0];
    let (p, _dir) = run_script(python, "python_frames_off", &[("MEMSHIM_PYTHON", "0")]);
    assert_eq!(p["python"]["frames"], false);
    assert_eq!(p["python"]["reason"], "turned off with MEMSHIM_PYTHON=0");
    let any_python = sites(&p, "host")
        .iter()
        .flat_map(|s| frames(s).iter())
        .any(|f| f["kind"] == "python");
    assert!(!any_python, "no Python frames when turned off");
    // The leak is still found, by its native stack.
    let ext = sites(&p, "host")
        .iter()
        .find(|s| frames(s)[0]["function"] == "ext_hold")
        .unwrap_or_else(|| panic!("the extension's leak: {}", dump(&p)));
    assert_eq!(bytes_count(ext), (2 * 30011, 2));
}

#[test]
fn a_native_program_has_no_python_section() {
    let dir = TestDir::new("python_none");
    let prog = dir.compile("leaky.c");
    let (_, report) = crate::util::traced(&dir, &prog, &[] as &[&str]);
    let p = process_by_exe(&report, "leaky");
    assert_eq!(p["python"], Value::Null);
}

#[test]
fn python_malloc_shows_each_small_object_at_its_line() {
    let python = &interpreters()[0];
    let exe = python.file_name().unwrap().to_string_lossy().into_owned();
    let run = |flag: Option<&str>, test: &str| {
        let dir = TestDir::new(test);
        std::fs::copy(
            leaks_dir().join("small_objects.py"),
            dir.root.join("small_objects.py"),
        )
        .expect("copy the script");
        let flags: Vec<&str> = flag.into_iter().collect();
        let script = [OsStr::new("small_objects.py")];
        run_python(&dir, &dir.traces(), &flags, python, &script, &[]);
        process_by_exe(&report_json(&dir.traces()), &exe).clone()
    };
    let line_11 = |p: &Value| -> Option<(u64, u64)> {
        sites(p, "host")
            .iter()
            .find(|s| {
                python_frames(s).first()
                    == Some(&("small_objects".into(), "small_objects.py".into(), 11))
            })
            .map(bytes_count)
    };
    let p = run(Some("--python-malloc"), "python_malloc_on");
    assert_eq!(line_11(&p), Some((1000 * 233, 1000)), "{}", dump(&p));
    // Without it the objects live in pymalloc's arenas: the line holds a few arena-sized blocks
    // at most, never the objects one by one.
    let p = run(None, "python_malloc_off");
    assert!(line_11(&p).is_none_or(|(_, n)| n < 10), "{}", dump(&p));
}

#[test]
fn device_memory_names_python_lines_and_lends_main_thread_frames_to_native_threads() {
    for python in interpreters() {
        let name = python.file_name().unwrap().to_string_lossy().into_owned();
        let dir = TestDir::new(&format!("python_cuda_{name}"));
        let cuda = crate::cuda::build(&dir);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda/python");
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-shared", "-fPIC", "-g", "-o"])
            .arg(dir.root.join("native_worker.so"))
            .arg(src.join("native_worker.c"))
            .args(["-ldl", "-lpthread"])
            .status()
            .expect("the C compiler runs");
        assert!(status.success(), "building native_worker.so");
        std::fs::copy(
            src.join("cuda_from_python.py"),
            dir.root.join("cuda_from_python.py"),
        )
        .expect("copy the script");
        let script = [OsStr::new("cuda_from_python.py")];
        let env = [("LD_LIBRARY_PATH", cuda.as_os_str())];
        run_python(&dir, &dir.traces(), &[], &python, &script, &env);
        let report = report_json(&dir.traces());
        let p = process_by_exe(&report, &name);
        let device = sites(p, "device");
        let at = |bytes: u64| {
            device
                .iter()
                .find(|s| bytes_count(s) == (bytes, 1))
                .unwrap_or_else(|| panic!("{name}: a {bytes}-byte device leak:\n{}", dump(p)))
        };
        let here = |f: &str, line| (f.to_string(), "cuda_from_python.py".to_string(), line);
        let forward = at(1 << 20);
        assert_eq!(
            python_frames(forward),
            vec![here("forward", 26), here("step", 34), here("<module>", 38)],
            "{name}"
        );
        assert!(frames(forward).iter().all(|f| f["main_thread"].is_null()));
        // The native thread's own frames first, then the main thread's, lent: exact lines from
        // 3.11 on (read from the line table), the function's first line before.
        let backward = at(3 << 20);
        assert_eq!(frames(backward)[0]["function"], "worker", "{name}");
        let exact = !name.ends_with("3.9") && !name.ends_with("3.10");
        let want = if exact {
            vec![here("backward", 30), here("step", 35), here("<module>", 38)]
        } else {
            vec![here("backward", 29), here("step", 33), here("<module>", 1)]
        };
        assert_eq!(python_frames(backward), want, "{name}");
        let lent: Vec<&Value> = frames(backward)
            .iter()
            .filter(|f| f["kind"] == "python")
            .collect();
        assert!(lent.iter().all(|f| f["main_thread"] == true), "{name}");
    }
}

#[test]
fn a_forked_process_running_the_dataloader_worker_loop_is_a_dataloader_worker() {
    let python = &interpreters()[0];
    let dir = TestDir::new("python_dataloader_role");
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/python_fakes");
    let script = fakes.join("loader_fork.py");
    run_python(&dir, &dir.traces(), &[], python, &[script.as_os_str()], &[]);
    let report = report_json(&dir.traces());
    let roles: Vec<(bool, &str)> = report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["forked"].as_bool().unwrap(), p["role"].as_str().unwrap()))
        .collect();
    assert_eq!(roles, vec![(false, "main"), (true, "DataLoader worker")]);
}

#[test]
fn many_threads_generators_and_daemon_threads_at_shutdown_never_crash() {
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/python_fakes");
    for python in interpreters() {
        let name = python.file_name().unwrap().to_string_lossy().into_owned();
        let dir = TestDir::new(&format!("python_stress_{name}"));
        for round in 0..2 {
            let traces = dir.root.join(format!("traces{round}"));
            let script = fakes.join("stress_threads.py");
            let args = [script.as_os_str(), OsStr::new("300")];
            let out = run_python(&dir, &traces, &[], &python, &args, &[]);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "{name}");
            let report = report_json(&traces);
            let p = process_by_exe(&report, &name);
            assert_eq!(p["end"], "exit", "{name}: {}", p["notes"]);
            assert_eq!(p["python"]["frames"], true, "{name}");
            // Allocations of every thread carry their Python frames: the recursion under `worker`.
            let collapsed = run_ok(
                memshim_cmd()
                    .args(["export", "--collapsed", "--by", "allocated"])
                    .arg(&traces),
            );
            let collapsed = String::from_utf8_lossy(&collapsed.stdout);
            assert!(
                collapsed.contains(";worker;deep;deep;"),
                "{name}: {}",
                &collapsed[..collapsed.len().min(2000)]
            );
        }
    }
}
