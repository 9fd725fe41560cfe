//! Hostile and damaged traces: each test pins one behaviour of the reader and the report with exact
//! expectations (`run_faults` has `memshim run`'s). Hostile traces are written with the trace crate's
//! own writer, then damaged byte by byte.
//!
//! # Safety
//! `mkfifo` gets a NUL-terminated path; it has no other precondition.
#![allow(unsafe_code)]
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
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
pub(crate) fn header(pid: u32, exe: &str, argv: &[&str]) -> Header {
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
pub(crate) fn write_trace(path: &Path, header: &Header, events: &[Event]) {
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
pub(crate) fn memshim_within<S: AsRef<OsStr>>(
    args: &[S],
    limit: Duration,
) -> (Option<i32>, String, String) {
    let mut child = memshim_cmd()
        .args(args)
        .env("MEMSHIM_SYMBOL_CACHE", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("memshim starts");
    // Read both pipes while waiting: a report larger than a pipe's buffer would otherwise block.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = out.join().expect("stdout read");
            let err = err.join().expect("stderr read");
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

pub(crate) fn json_report(path: &Path) -> Value {
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
    crate::report::unpack(
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}")),
    )
}

pub(crate) fn notes(p: &Value) -> Vec<String> {
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
    let want = format!("the trace is still being written: its process {me} is running, so these are the figures so far (run the report again when it has ended)");
    assert!(notes(&p).contains(&want), "{:?}", notes(&p));
    assert!(
        !notes(&p).iter().any(|n| n.contains("killed or crashed")),
        "{:?}",
        notes(&p)
    );
    drop(w);
    drop(file);
    // The same trace of a process that has ended (its pid is free): it was killed or crashed.
    let mut gone = Command::new("true").spawn().expect("true runs");
    let pid = gone.id();
    gone.wait().expect("true ends");
    let file = std::fs::File::create(&trace).unwrap();
    let mut w = TraceWriter::new(&file, &header(pid, "/bin/prog", &["prog"]), Some(3)).unwrap();
    for ev in events("/nonexistent/prog", 64, None, false) {
        w.push(&ev).unwrap();
    }
    w.flush_frame().unwrap();
    drop(w);
    drop(file);
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

#[test]
fn a_trace_that_ends_before_any_allocation_does_not_claim_none_were_made() {
    let dir = TestDir::new("hostile_early_end");
    let trace = dir.path("early.1.mshim");
    let mut gone = Command::new("true").spawn().expect("true runs");
    let pid = gone.id();
    gone.wait().expect("true ends");
    // Only the module map made it to the file: the process died in its first moments.
    let first = events("/nonexistent/prog", 64, None, false)[..1].to_vec();
    write_trace(&trace, &header(pid, "/bin/prog", &["prog"]), &first);
    let p = json_report(&trace)["processes"][0].clone();
    assert_eq!(
        (p["truncated"].as_bool(), p["heap"]["allocations"].as_u64()),
        (Some(true), Some(0))
    );
    let want = "no allocation is in the trace, which ends early: the process died or tracing stopped before the shim wrote any, so 0 allocations is not a measurement";
    assert!(notes(&p).contains(&want.to_string()), "{:?}", notes(&p));
}
