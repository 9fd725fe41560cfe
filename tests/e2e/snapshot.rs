//! `memshim snapshot PID`: a report of what a program `memshim run` is tracing holds now, with its
//! exact live bytes and sites, while the program runs on and then ends with its own status.
use std::io::Read;

use serde_json::Value;

use crate::report::*;
use crate::top::start_traced;
use crate::util::*;

#[test]
fn snapshot_reports_what_a_running_program_holds_now_and_it_runs_on() {
    let dir = TestDir::new("snapshot_running_program");
    let prog = dir.compile("top_target.c");
    let (mut run, mut stdout) = start_traced(&dir, &prog, "top_target: ready");
    let json = dir.path("snapshot.json");
    // By the pid of `memshim run`: the snapshot is of its child's trace.
    let said = memshim(&[
        "snapshot".to_string(),
        run.id().to_string(),
        "--format".into(),
        "json".into(),
        "-o".into(),
        json.display().to_string(),
    ]);
    assert!(said.status.success(), "{}", said.describe());
    let err = said.stderr_str();
    if err.contains("cannot trace process") {
        // Without ptrace the report is of what the shim wrote by itself, which here is all of it.
        println!("memshim may not ptrace another process here: {err}");
    } else {
        assert!(err.contains("wrote out what it recorded to "), "{err}");
    }
    let report: Value = crate::report::parse(&std::fs::read(&json).expect("the snapshot"));
    let procs = processes(&report);
    assert_eq!(procs.len(), 1);
    let p = &procs[0];
    assert_eq!(p["still_writing"], true, "{}", dump(p));
    assert_eq!(p["end"], Value::Null);
    let big = site_with(p, "host", "keep_big");
    assert_eq!(bytes_count(big), (3_000_000, 3));
    assert_eq!(frame(big, 0)["line"], 18);
    let small = site_with(p, "host", "keep_small");
    assert_eq!(bytes_count(small), (40_960, 10));
    assert_eq!(frame(small, 0)["line"], 19);
    // The two sites and the C library's buffer for the piped stdout.
    assert_eq!(
        p["heap"]["live_bytes"],
        3_000_000 + 40_960 + 4096,
        "{}",
        dump(p)
    );
    assert_eq!(p["heap"]["live_count"], 14);

    assert!(
        run.try_wait().expect("wait on memshim run").is_none(),
        "the program runs on"
    );
    std::fs::write(dir.path("stop"), b"").expect("create the stop file");
    let mut rest = String::new();
    stdout
        .read_to_string(&mut rest)
        .expect("the program's stdout");
    assert_eq!(rest, "top_target: done\n");
    assert_eq!(run.wait().expect("memshim run ends").code(), Some(7));
}

#[test]
fn snapshot_of_a_process_that_writes_no_trace_says_what_to_do() {
    // A process of its own, untraced and childless (this test binary's other tests run traced
    // children, whose traces a pid's search would find).
    let mut idle = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep starts");
    let me = idle.id();
    let out = memshim(&["snapshot".to_string(), me.to_string()]);
    let _ = idle.kill();
    let _ = idle.wait();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(
        err.starts_with(&format!("memshim: process {me} ("))
            && err.contains("is not writing a memshim trace that can be found")
            && err.contains(&format!("memshim attach {me}")),
        "{err}"
    );
}
