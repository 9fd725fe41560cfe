//! Hostile and damaged traces, and `memshim run` under signals and lost output: each test pins one
//! behaviour of issue 16 with exact expectations. Hostile traces are written with the trace crate's
//! own writer, then damaged byte by byte.
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memshim_trace::{
    Alloc, AllocFn, Clock, End, EndReason, Event, Header, Module, Record, Segment, StackDef,
    SymFrame, Symbol, TraceWriter,
};
use serde_json::Value;

use crate::util::*;

const NO_ARGS: [&str; 0] = [];

/// A header for a made-up process `pid` on this host.
fn header(pid: u32, exe: &str, argv: &[&str]) -> Header {
    Header {
        pid,
        ppid: 1,
        exe: exe.into(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .expect("the host name")
            .trim()
            .into(),
        start_unix_ns: 1_700_000_000_000_000_000,
        clock: Clock::Monotonic,
        clock_start_ns: 1_000_000,
        page_size: 4096,
        shim_version: "test".into(),
        stack_depth: 64,
        forked: false,
    }
}

/// One leaked allocation of `size` at a stack of one frame inside `module` (by path), named by
/// `symbol` when given; ends in order when `end` is set.
fn events(module: &str, size: u64, symbol: Option<SymFrame>, end: bool) -> Vec<Event> {
    let at = |t: u64, record| Event { t, tid: 7, record };
    let mut v = vec![
        at(
            1_000_000,
            Record::ModuleLoad(Box::new(Module {
                path: module.into(),
                base: 0x40_0000,
                build_id: Vec::new(),
                segments: vec![Segment {
                    start: 0x40_0000,
                    len: 0x1000,
                    exec: true,
                }],
            })),
        ),
        at(
            2_000_000,
            Record::Stack(StackDef {
                id: 0,
                frames: vec![0x40_0123],
            }),
        ),
        at(
            2_000_000,
            Record::Alloc(Alloc {
                func: AllocFn::Malloc,
                addr: 0x5555_0000,
                size,
                stack: 0,
            }),
        ),
    ];
    if let Some(f) = symbol {
        v.push(at(
            3_000_000,
            Record::Symbols(vec![Symbol {
                addr: 0x40_0123,
                frames: vec![f],
            }]),
        ));
    }
    if end {
        v.push(at(
            4_000_000,
            Record::End(End {
                reason: EndReason::Exit,
                dropped_events: 0,
            }),
        ));
    }
    v
}

/// Writes `events` as one trace file, one frame per event.
fn write_trace(path: &Path, header: &Header, events: &[Event]) {
    let file = std::fs::File::create(path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    let mut w = TraceWriter::new(file, header, Some(3)).expect("a header");
    for ev in events {
        w.push(ev).expect("an event");
        w.flush_frame().expect("a frame");
    }
    w.finish().expect("the trace");
}

/// `memshim ARGS` that must end within `limit` (a hang fails the test instead of stalling it).
fn memshim_within<S: AsRef<OsStr>>(args: &[S], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = memshim_cmd()
        .args(args)
        .env("MEMSHIM_SYMBOL_CACHE", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("memshim starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let (mut out, mut err) = (String::new(), String::new());
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), out, err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "memshim {:?} hung for {limit:?}",
                args.iter()
                    .map(|a| a.as_ref().to_owned())
                    .collect::<Vec<_>>()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn json_report(path: &Path) -> Value {
    let (code, out, err) = memshim_within(
        &[
            OsStr::new("report"),
            OsStr::new("--format"),
            OsStr::new("json"),
            path.as_os_str(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "stderr: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn notes(p: &Value) -> Vec<String> {
    p["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n.as_str().expect("a note").to_string())
        .collect()
}

#[test]
fn an_empty_trace_in_a_directory_is_named_and_the_others_are_reported() {
    let dir = TestDir::new("hostile_empty_trace_in_dir");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &NO_ARGS);
    let alone = json_report(&dir.traces());
    let empty = dir.traces().join("leaky.999999.mshim");
    std::fs::write(&empty, b"").unwrap();
    let report = json_report(&dir.traces());
    // The other trace is reported exactly as it is alone.
    assert_eq!(report["processes"].as_array().unwrap().len(), 1);
    assert_eq!(report["processes"], alone["processes"]);
    assert_eq!(alone["unreadable"], serde_json::json!([]));
    assert_eq!(
        report["unreadable"],
        serde_json::json!([{
            "trace": empty.display().to_string(),
            "why": "the trace is empty (0 bytes); the process may have been killed before the shim wrote its header",
        }])
    );
    let (code, text, _) = memshim_within(
        &[OsStr::new("report"), dir.traces().as_os_str()],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0));
    assert!(
        text.contains(&format!(
            "NOT READ: {}: the trace is empty (0 bytes)",
            empty.display()
        )),
        "{text}"
    );
    // `info` describes it and goes on; `export` leaves it out and exports the other.
    let (code, info, _) = memshim_within(
        &[OsStr::new("info"), dir.traces().as_os_str()],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0));
    assert!(
        info.contains(&format!(
            "trace:        {}\nunreadable:   the trace is empty (0 bytes)",
            empty.display()
        )),
        "{info}"
    );
    assert!(info.contains("end:          exit"), "{info}");
    let (code, collapsed, err) = memshim_within(
        &[
            OsStr::new("export"),
            OsStr::new("--collapsed"),
            dir.traces().as_os_str(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(collapsed.contains("leak_malloc"), "{collapsed}");
    assert!(err.contains("left out of the export"), "{err}");
}

#[test]
fn a_module_path_that_names_a_fifo_is_never_opened() {
    let dir = TestDir::new("hostile_fifo_module");
    let fifo = dir.path("module.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let trace = dir.path("fifo.42.mshim");
    write_trace(
        &trace,
        &header(42, "/bin/prog", &["prog"]),
        &events(fifo.to_str().unwrap(), 4096, None, true),
    );
    let report = json_report(&trace);
    let p = &report["processes"][0];
    assert_eq!(p["leaks"]["host"]["bytes"], 4096);
    let want = format!(
        "{} is a FIFO, not a module's file, so it was not opened and its frames have no names",
        fifo.display()
    );
    assert!(notes(p).contains(&want), "{:?}", notes(p));
    // A directory and a device likewise.
    for (path, what) in [("/dev/zero", "a device"), ("/tmp", "a directory")] {
        write_trace(
            &trace,
            &header(42, "/bin/prog", &["prog"]),
            &events(path, 4096, None, true),
        );
        let p = &json_report(&trace)["processes"][0];
        let want = format!("{path} is {what}, not a module's file, so it was not opened and its frames have no names");
        assert!(notes(p).contains(&want), "{:?}", notes(p));
    }
}

/// The frames of a version-7 trace as byte ranges (after the header).
fn frame_spans(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut at = 20 + header_len;
    let mut spans = Vec::new();
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 2..at + 6].try_into().unwrap()) as usize;
        spans.push(at..at + 30 + len);
        at += 30 + len;
    }
    spans
}

#[test]
fn duplicated_and_missing_frames_are_warned_about_and_never_double_counted() {
    let dir = TestDir::new("hostile_duplicate_frames");
    let trace = dir.path("dup.42.mshim");
    write_trace(
        &trace,
        &header(42, "/bin/prog", &["prog"]),
        &events("/nonexistent/prog", 1000, None, true),
    );
    let bytes = std::fs::read(&trace).unwrap();
    let spans = frame_spans(&bytes);
    assert_eq!(spans.len(), 4, "module, stack, alloc, end: one frame each");
    // The allocation's frame twice: still 1000 bytes in one block.
    let alloc = spans[2].clone();
    let mut twice = bytes[..alloc.end].to_vec();
    twice.extend_from_slice(&bytes[alloc.clone()]);
    twice.extend_from_slice(&bytes[alloc.end..]);
    std::fs::write(&trace, &twice).unwrap();
    let p = json_report(&trace)["processes"][0].clone();
    assert_eq!(
        (
            p["leaks"]["host"]["bytes"].as_u64(),
            p["leaks"]["host"]["count"].as_u64()
        ),
        (Some(1000), Some(1))
    );
    assert!(
        notes(&p).contains(
            &"frames damaged: 1 frame(s) appear twice in the file and were read once".to_string()
        ),
        "{:?}",
        notes(&p)
    );
    // The allocation's frame lost: no bytes, and the report says frames are missing.
    let mut lost = bytes[..alloc.start].to_vec();
    lost.extend_from_slice(&bytes[alloc.end..]);
    std::fs::write(&trace, &lost).unwrap();
    let p = json_report(&trace)["processes"][0].clone();
    assert_eq!(p["leaks"]["host"]["bytes"], 0);
    assert!(
        notes(&p).contains(
            &"frames damaged: 1 frame(s) are missing between the ones read, so the counts are low"
                .to_string()
        ),
        "{:?}",
        notes(&p)
    );
}

#[test]
fn a_trace_still_being_written_is_not_called_crashed() {
    let dir = TestDir::new("hostile_still_writing");
    let trace = dir.path("live.1.mshim");
    // This test process is the "writer": it holds the file open, and the header names its pid.
    let me = std::process::id();
    let file = std::fs::File::create(&trace).unwrap();
    let mut w = TraceWriter::new(&file, &header(me, "/bin/prog", &["prog"]), Some(3)).unwrap();
    for ev in events("/nonexistent/prog", 64, None, false) {
        w.push(&ev).unwrap();
    }
    w.flush_frame().unwrap();
    let p = json_report(&trace)["processes"][0].clone();
    assert_eq!(
        (p["still_writing"].as_bool(), p["truncated"].as_bool()),
        (Some(true), Some(true))
    );
    let want = format!("the trace is still being written: process {me} is running and has it open, so these are the figures so far (run the report again when it has ended)");
    assert!(notes(&p).contains(&want), "{:?}", notes(&p));
    assert!(
        !notes(&p).iter().any(|n| n.contains("killed or crashed")),
        "{:?}",
        notes(&p)
    );
    drop(w);
    drop(file);
    // Closed without its end: now it was killed or crashed.
    let p = json_report(&trace)["processes"][0].clone();
    assert_eq!(p["still_writing"], false);
    assert!(
        notes(&p).iter().any(|n| n.contains("killed or crashed")),
        "{:?}",
        notes(&p)
    );
}

#[test]
fn the_html_page_escapes_everything_a_hostile_trace_says() {
    let dir = TestDir::new("hostile_html");
    let trace = dir.path("evil.42.mshim");
    let evil_arg = "\"'><img src=x onerror=alert(2)>";
    let evil = header(
        42,
        "</script><script>alert(3)</script>",
        &["<script>alert(1)</script>", evil_arg],
    );
    let sym = SymFrame {
        function: Some("<script>alert(4)</script>".into()),
        file: Some("\"quoted'</script>.c".into()),
        line: 7,
    };
    write_trace(
        &trace,
        &evil,
        &events("/x/<b>lib</b>.so", 512, Some(sym), true),
    );
    let (code, html, err) = memshim_within(
        &[
            OsStr::new("report"),
            OsStr::new("--format"),
            OsStr::new("html"),
            trace.as_os_str(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    // The page's own two script elements and nothing else: no element can be opened or closed by
    // the trace's text.
    assert_eq!(html.matches("<script").count(), 2, "{html}");
    assert_eq!(html.matches("</script").count(), 2);
    assert!(
        !html.contains("<img"),
        "an attribute-breaking argument stayed inert"
    );
    // The data is all there, escaped, and parses back to the trace's own strings.
    let start =
        html.find("type=\"application/json\">").unwrap() + "type=\"application/json\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).expect("the embedded data is JSON");
    let p = &data["processes"][0];
    assert_eq!(
        p["argv"],
        serde_json::json!(["<script>alert(1)</script>", evil_arg])
    );
    assert_eq!(p["exe"], "</script><script>alert(3)</script>");
    let table = data["frame_table"].to_string();
    assert!(
        table.contains("<script>alert(4)</script>") && table.contains("\\\"quoted'</script>.c"),
        "{table}"
    );
}

#[test]
fn redact_covers_every_format_and_export() {
    let dir = TestDir::new("hostile_redact");
    let home = dir.path("home/zed-secret-user");
    std::fs::create_dir_all(&home).unwrap();
    let trace = dir.path("r.42.mshim");
    let exe = format!("{}/bin/prog", home.display());
    let sym = SymFrame {
        function: Some("main".into()),
        file: Some(format!("{}/src/prog.c", home.display())),
        line: 3,
    };
    let mut h = header(42, &exe, &[&exe, "--token=zed-s3cret"]);
    h.hostname = "zed-secret-host".into();
    write_trace(
        &trace,
        &h,
        &events(
            &format!("{}/lib/libx.so", home.display()),
            512,
            Some(sym),
            true,
        ),
    );
    let formats: [&[&str]; 6] = [
        &["report", "--redact", "--format", "text"],
        &["report", "--redact", "--format", "json"],
        &["report", "--redact", "--format", "markdown"],
        &["report", "--redact", "--format", "html"],
        &["export", "--redact", "--collapsed"],
        &["export", "--redact", "--perfetto"],
    ];
    for args in formats {
        let mut cmd = memshim_cmd();
        cmd.args(args)
            .arg(&trace)
            .env("HOME", &home)
            .env("USER", "zed-secret-user");
        let out = run_ok(&mut cmd);
        let text = out.stdout_str();
        assert!(!text.is_empty(), "{args:?} wrote nothing");
        for secret in ["zed-secret-user", "zed-s3cret", "zed-secret-host"] {
            assert!(!text.contains(secret), "{args:?} shows {secret}: {text}");
        }
        assert!(
            text.contains("prog"),
            "{args:?} keeps the program's name: {text}"
        );
    }
}

/// A program that prints its pid, then waits for signals; SIGTERM and SIGINT end it by default.
const WAITER: &str = r#"#include <stdio.h>
#include <unistd.h>
int main(void) { printf("%d\n", (int)getpid()); fflush(stdout); for (;;) pause(); }
"#;

fn compile_source(dir: &TestDir, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.path(&format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.path(name);
    let status = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(status.success(), "cc {name}.c");
    out
}

#[test]
fn signals_sent_to_memshim_run_reach_the_command_and_its_status_is_kept() {
    let dir = TestDir::new("hostile_signals");
    let prog = compile_source(&dir, "waiter", WAITER, &["-O1"]);
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGHUP, "HUP"),
    ] {
        let mut child = memshim_cmd()
            .args(["run", "--quiet", "-o"])
            .arg(dir.path(&format!("traces-{name}")))
            .arg("--")
            .arg(&prog)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("memshim run starts");
        let mut line = String::new();
        let mut stdout = child.stdout.take().unwrap();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0] as char);
        }
        let pid: i32 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("a pid: {line:?}"));
        // SAFETY: sends a signal to the memshim process this test started.
        unsafe { libc::kill(child.id() as i32, sig) };
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "SIG{name}: memshim run did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            status.code(),
            Some(128 + sig),
            "SIG{name}: memshim leaves with the command's status"
        );
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "SIG{name}: the command {pid} is still running"
        );
    }
}

#[test]
fn a_static_executable_is_run_and_said_to_be_untraceable() {
    let dir = TestDir::new("hostile_static");
    let src = "#include <stdio.h>\nint main(void) { puts(\"static ran\"); return 7; }\n";
    let prog = compile_source(&dir, "static_prog", src, &["-static", "-O1"]);
    let mut cmd = memshim_cmd();
    cmd.args(["run", "-o"])
        .arg(dir.traces())
        .arg("--")
        .arg(&prog);
    let output = cmd.env("MEMSHIM_SYMBOL_CACHE", "off").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(7), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "static ran\n");
    let plain = format!(
        "memshim: {} is a static executable (it has no ELF interpreter), so the shim cannot be loaded into it and it cannot be traced; running it untraced",
        prog.display()
    );
    assert!(stderr.contains(&plain), "{stderr}");
    assert!(
        stderr.contains(
            "wrote no trace: it is a static executable, which the shim cannot be loaded into"
        ),
        "{stderr}"
    );
}

#[test]
fn a_removed_output_directory_leaves_the_exit_status_alone() {
    let dir = TestDir::new("hostile_removed_output");
    for code in [0, 5] {
        let mut cmd = memshim_cmd();
        cmd.args(["run", "--quiet", "-o"])
            .arg(dir.path(&format!("gone-{code}")))
            .args([
                "--",
                "sh",
                "-c",
                &format!("rm -rf \"$MEMSHIM_OUTPUT\"; exit {code}"),
            ]);
        let output = cmd.env("MEMSHIM_SYMBOL_CACHE", "off").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains("the output directory was removed or made unreadable during the run, so this run's traces are lost"),
            "{stderr}"
        );
    }
}

#[test]
fn a_program_whose_allocations_never_reach_the_shim_gets_a_reason_not_a_bare_zero() {
    let dir = TestDir::new("hostile_no_malloc");
    // Memory from mmap only, as a program with an allocator of its own gets it.
    let own = "#include <sys/mman.h>\nint main(void) { char *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); p[0] = 1; return p[0] == 1 ? 4 : 1; }\n";
    let prog = compile_source(&dir, "own_allocator", own, &["-O0"]);
    let out = memshim_run(&dir, &prog, &NO_ARGS);
    assert_eq!(out.status.code(), Some(4), "{}", out.describe());
    let report = json_report(&dir.traces());
    let p = &report["processes"][0];
    assert_eq!(p["heap"]["allocations"], 0);
    assert!(
        notes(p).contains(&"no malloc call reached the shim: the program allocates nothing on the heap, or uses an allocator of its own (statically linked, or one that never calls libc's malloc)".to_string()),
        "{:?}",
        notes(p)
    );
    // Nothing recorded at all: `memshim run` says so about the trace.
    let nothing = compile_source(&dir, "nothing", "int main(void) { return 0; }\n", &["-O1"]);
    let mut cmd = memshim_cmd();
    cmd.args(["run", "-o"])
        .arg(dir.path("traces-nothing"))
        .arg("--")
        .arg(&nothing);
    let out = run_ok(&mut cmd);
    let trace = trace_files(&dir.path("traces-nothing"));
    assert_eq!(trace.len(), 1);
    assert!(
        out.stderr_str().contains(&format!(
            "memshim: note: {}: no allocation reached the shim: the program allocates nothing, or uses its own allocator (its malloc calls never reach libc's)",
            trace[0].display()
        )),
        "{}",
        out.describe()
    );
}
