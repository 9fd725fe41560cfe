//! `memshim attach`: a program started without memshim is attached to while it runs, traced for a
//! moment, detached, and then goes on to end exactly as it does when nothing attaches to it. The
//! report holds the allocations made while attached, with their exact bytes and sites.
//!
//! Where this machine does not let memshim ptrace a process that is not its child (Yama's
//! ptrace_scope, no CAP_SYS_PTRACE, a seccomp profile), the tests print why and skip.
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::report::*;
use crate::util::*;

/// A program under test, started with its stdout piped and read up to its ready line.
pub(crate) struct Running {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    seen: String,
}

impl Running {
    pub(crate) fn start(cmd: &mut Command, ready: &str) -> Running {
        hermetic(cmd);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut seen = String::new();
        stdout
            .read_line(&mut seen)
            .expect("the program's first line");
        assert_eq!(seen.trim_end(), ready, "{cmd:?} did not start as expected");
        Running {
            child,
            stdout,
            seen,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The program's next line of stdout (kept for `finish`'s too).
    pub(crate) fn next_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("a line of the program's stdout");
        self.seen.push_str(&line);
        line
    }

    /// Asks it to end (the `stop` file in `cwd`) and waits: its status, stdout and stderr.
    pub(crate) fn finish(mut self, cwd: &Path) -> (Option<i32>, String, String) {
        std::fs::write(cwd.join("stop"), b"").expect("create the stop file");
        let mut out = self.seen;
        self.stdout
            .read_to_string(&mut out)
            .expect("the program's stdout");
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err).expect("the program's stderr");
        }
        let status = self.child.wait().expect("wait for the program");
        (status.code(), out, err)
    }
}

/// Attaches to `running` (memshim's environment plus `env`), makes the `go` file in `cwd`, waits
/// for the program's line `done`, and detaches with Ctrl-C. False (with the reason printed) when
/// this machine does not let memshim ptrace another process.
pub(crate) fn attached_until(
    running: &mut Running,
    traces: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
    done: &str,
) -> bool {
    let mut attach = memshim_cmd();
    attach
        .arg("attach")
        .arg(running.pid().to_string())
        .arg("-o")
        .arg(traces)
        .stderr(Stdio::piped());
    for (k, v) in env {
        attach.env(k, v);
    }
    hermetic(&mut attach);
    let mut attach = attach.spawn().expect("memshim attach starts");
    let mut said = BufReader::new(attach.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    said.read_line(&mut line)
        .expect("memshim attach's first line");
    if !line.contains("attached to process") {
        let _ = attach.wait();
        assert!(line.contains("cannot trace process"), "{line}");
        println!("skipped: memshim may not ptrace another process here: {line}");
        return false;
    }
    std::fs::write(cwd.join("go"), b"").expect("create the go file");
    assert_eq!(running.next_line(), format!("{done}\n"));
    let sent = Command::new("kill")
        .args(["-INT", &attach.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let mut rest = String::new();
    said.read_to_string(&mut rest)
        .expect("memshim attach's stderr");
    assert!(
        attach.wait().expect("memshim attach ends").success(),
        "{line}{rest}"
    );
    true
}

/// Runs `cmd` in `cwd` from start to end with nothing attached: what it does on its own.
fn bare(cmd: &mut Command, ready: &str, cwd: &Path) -> (Option<i32>, String, String) {
    let r = Running::start(cmd.current_dir(cwd), ready);
    std::thread::sleep(std::time::Duration::from_millis(200));
    r.finish(cwd)
}

/// What `memshim attach` said, or `None` (with the reason printed) when this machine does not
/// let it trace another process.
fn attach_for(pid: u32, seconds: &str, traces: &Path) -> Option<Outcome> {
    let out = memshim(&[
        OsStr::new("attach"),
        OsStr::new(&pid.to_string()),
        OsStr::new("--duration"),
        OsStr::new(seconds),
        OsStr::new("-o"),
        traces.as_os_str(),
    ]);
    let err = out.stderr_str();
    if !out.status.success() && err.contains("cannot trace process") {
        println!("skipped: memshim may not ptrace another process here: {err}");
        return None;
    }
    assert!(out.status.success(), "{}", out.describe());
    Some(out)
}

/// Attaches to the program `cmd` starts for `seconds`, detaches, lets it end; checks that it ended
/// as it does bare and returns its report (or `None` when ptrace is not permitted).
fn attached_run(name: &str, cmd: impl Fn() -> Command, ready: &str) -> Option<(Value, TestDir)> {
    let dir = TestDir::new(name);
    let bare_dir = dir.path("bare");
    let attached_dir = dir.path("attached");
    for d in [&bare_dir, &attached_dir] {
        std::fs::create_dir_all(d).expect("a working directory");
    }
    let alone = bare(&mut cmd(), ready, &bare_dir);
    let running = Running::start(cmd().current_dir(&attached_dir), ready);
    let said = attach_for(running.pid(), "1", &dir.traces());
    let ended = running.finish(&attached_dir);
    let said = said?;
    assert_eq!(
        ended,
        alone,
        "attached, the program must end as it does alone\n{}",
        said.describe()
    );
    let err = said.stderr_str();
    assert!(
        err.contains(&format!("attached to process {}", ended_pid(&dir)))
            && err.contains("detached from process"),
        "{}",
        said.describe()
    );
    let report = report_json(&dir.traces());
    let procs = processes(&report);
    assert_eq!(procs.len(), 1, "one trace: {}", summary(&report));
    Some((procs[0].clone(), dir))
}

/// The pid in the name of the one trace file (`<exe>.<pid>.mshim`).
fn ended_pid(dir: &TestDir) -> String {
    let files = trace_files(&dir.traces());
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_stem().unwrap().to_string_lossy().into_owned();
    name.rsplit('.').next().unwrap().to_string()
}

/// What every attached trace says about itself.
fn check_attached(p: &Value) {
    assert_eq!(p["end"], "detached", "{}", dump(p));
    assert_eq!(p["truncated"], false);
    let after = p["attached_after_s"].as_f64().expect("attached_after_s");
    assert!(after > 0.0 && after < 120.0, "attached after {after} s");
    let notes: Vec<&str> = p["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with("attached ")
            && n.contains("after the process started")
            && n.contains("counted apart")),
        "{notes:?}"
    );
    // Whoever added the symbols is named: memshim attach, not run.
    assert!(
        notes.contains(&"symbols were added by memshim attach right after it detached"),
        "{notes:?}"
    );
}

#[test]
fn attach_to_a_running_c_program_sees_what_it_allocates_then_lets_it_end_as_alone() {
    let dir = TestDir::new("attach_c_build");
    let prog: PathBuf = dir.compile("attach_target.c");
    let Some((p, traced)) = attached_run(
        "attach_to_a_running_c_program",
        || Command::new(&prog),
        "attach_target: ready",
    ) else {
        return;
    };
    check_attached(&p);
    let kept = site_with(&p, "host", "keep_block");
    let (bytes, n) = bytes_count(kept);
    // 1 s at one turn per 20 ms and more: at least a few dozen turns were seen.
    assert!(n >= 10, "{} turns: {}", n, dump(&p));
    assert_eq!(bytes, 333 * n, "{}", dump(&p));
    // The program went on after the detach: what it held then is held, not leaked.
    let report = report_json(&traced.traces());
    let verdict = report["verdict"].as_array().expect("verdict");
    let kinds: Vec<&str> = verdict.iter().filter_map(|v| v["kind"].as_str()).collect();
    assert!(!kinds.contains(&"leak"), "{kinds:?}");
    let held = verdict
        .iter()
        .find(|v| v["kind"] == "held_at_detach")
        .unwrap_or_else(|| panic!("no held_at_detach item: {kinds:?}"));
    assert_eq!(held["bytes"], 333 * n);
    assert_eq!(held["severity"], "low");
    assert_eq!(held["site"], "keep_block (attach_target.c:24)");
    let text = held["text"].as_str().expect("text");
    assert!(text.contains("still held when memshim detached"), "{text}");
    let shown = memshim(&[OsStr::new("report"), traced.traces().as_os_str()]);
    assert!(
        shown.stdout_str().contains("heap held at detach:")
            && !shown.stdout_str().contains("leaked heap:"),
        "{}",
        shown.stdout_str()
    );
    assert_eq!(kept["allocations"], n);
    assert_eq!(functions(kept)[..2], ["keep_block", "main"]);
    assert_eq!(frame(kept, 0)["line"], 24);
    assert_eq!(
        sites(&p, "host").len(),
        1,
        "only keep_block holds memory: {}",
        dump(&p)
    );
    let heap = &p["heap"];
    assert_eq!(heap["allocations"], 2 * n, "{}", dump(&p));
    assert_eq!(heap["frees"], n, "the scratch blocks: {}", dump(&p));
    assert_eq!(heap["temporary_allocations"], n);
    assert_eq!(heap["live_bytes"], 333 * n);
    // The early blocks were allocated before attach: their frees are counted, never subtracted.
    assert_eq!(heap["unknown_frees"], n, "{}", dump(&p));
}

#[test]
fn attach_to_a_program_that_used_its_first_32_thread_keys_traces_its_running_threads() {
    let dir = TestDir::new("attach_many_keys_build");
    let prog: PathBuf = dir.compile_with(
        "attach_many_keys.c",
        "attach_many_keys",
        &["-g", "-O0", "-pthread"],
    );
    let Some((p, _dir)) = attached_run(
        "attach_many_keys",
        || Command::new(&prog),
        "attach_many_keys: ready",
    ) else {
        return;
    };
    check_attached(&p);
    let kept = site_with(&p, "host", "keep_block");
    let (bytes, n) = bytes_count(kept);
    assert!(n >= 10, "{} turns: {}", n, dump(&p));
    assert_eq!(bytes, 111 * n, "{}", dump(&p));
    // The threads running at attach allocate a block and free it every millisecond: traced.
    let frees = p["heap"]["frees"].as_u64().expect("frees");
    assert!(
        frees >= 3 * n,
        "{frees} frees against {n} turns: {}",
        dump(&p)
    );
}

#[test]
fn attach_to_a_running_python_program_sees_its_python_frames() {
    let python = crate::python::interpreters()
        .into_iter()
        .next()
        .expect("a CPython interpreter");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python/attach/attach_target.py");
    let Some((p, _dir)) = attached_run(
        "attach_to_a_running_python_program",
        || {
            let mut c = Command::new(&python);
            c.arg(&script).env("PYTHONDONTWRITEBYTECODE", "1");
            c
        },
        "attach_target: ready",
    ) else {
        return;
    };
    check_attached(&p);
    assert_eq!(p["python"]["frames"], true, "{}", p["python"]);
    let made: Vec<&Value> = sites(&p, "host")
        .iter()
        .filter(|s| {
            crate::python::python_frames(s)
                .first()
                .is_some_and(|f| f.0 == "make")
        })
        .collect();
    assert_eq!(made.len(), 1, "one site in make: {}", dump(&p));
    let (bytes, n) = bytes_count(made[0]);
    assert!(n >= 10, "{n} turns: {}", dump(&p));
    // bytearray keeps room for a trailing NUL.
    assert_eq!(bytes, 200_001 * n, "{}", dump(&p));
    let here = |f: &str, line: u64| (f.to_string(), "attach_target.py".to_string(), line);
    assert_eq!(
        crate::python::python_frames(made[0]),
        vec![here("make", 14), here("main", 22), here("<module>", 29)]
    );
}

#[test]
fn attach_says_plainly_when_there_is_no_such_process() {
    let out = memshim(&["attach", "99999999", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr_str().contains("no process has PID 99999999"),
        "{}",
        out.describe()
    );
}

#[test]
fn attach_refuses_a_process_memshim_run_traces_already() {
    let dir = TestDir::new("attach_refuses_a_process_memshim_run_traces");
    let prog = dir.compile("attach_target.c");
    let mut cmd = memshim_cmd();
    cmd.args(["run", "--quiet", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(&prog)
        .current_dir(&dir.root);
    let running = Running::start(&mut cmd, "attach_target: ready");
    // memshim run's child is the program: the one process whose parent is memshim run.
    let pid = std::fs::read_to_string(format!(
        "/proc/{}/task/{}/children",
        running.pid(),
        running.pid()
    ))
    .expect("memshim run's children");
    let pid = pid
        .split_whitespace()
        .next()
        .expect("the program's pid")
        .to_string();
    let out = memshim(&[
        OsStr::new("attach"),
        OsStr::new(&pid),
        OsStr::new("-o"),
        dir.path("attached").as_os_str(),
    ]);
    let (status, stdout, _) = running.finish(&dir.root);
    assert_eq!(status, Some(3));
    assert!(stdout.ends_with("attach_target: done\n"), "{stdout}");
    if out.stderr_str().contains("cannot trace process") {
        println!(
            "skipped: memshim may not ptrace another process here: {}",
            out.stderr_str()
        );
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr_str().contains("is already traced by memshim"),
        "{}",
        out.describe()
    );
    // The run's own trace is whole: the attempt changed nothing in it.
    let p = process_by_exe(&report_json(&dir.traces()), "attach_target").clone();
    assert_eq!(p["end"], "exit", "{}", dump(&p));
    assert!(p["attached_after_s"].is_null());
}

#[test]
fn attach_refuses_a_static_executable_with_the_reason() {
    let dir = TestDir::new("attach_refuses_a_static_executable");
    let prog = dir.compile_with(
        "attach_target.c",
        "attach_static",
        &["-g", "-O0", "-static"],
    );
    let running = Running::start(
        Command::new(&prog).current_dir(&dir.root),
        "attach_target: ready",
    );
    let out = memshim(&[
        OsStr::new("attach"),
        OsStr::new(&running.pid().to_string()),
        OsStr::new("-o"),
        dir.traces().as_os_str(),
    ]);
    let (status, stdout, _) = running.finish(&dir.root);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr_str().contains("is a static executable"),
        "{}",
        out.describe()
    );
    assert_eq!(status, Some(3));
    assert!(stdout.ends_with("attach_target: done\n"), "{stdout}");
}
