//! `memshim attach` to a process that had the CUDA driver loaded: the trace cannot see the driver
//! calls made after attach (the runtime fetched its entry points long before), and the report says
//! so instead of showing an empty device section.
use std::process::Command;

use serde_json::Value;

use crate::attach::Running;
use crate::report::*;
use crate::util::*;

#[test]
fn attached_with_the_cuda_driver_loaded_the_report_says_what_it_cannot_see() {
    let dir = TestDir::new("attach_cuda_unseen");
    let prog = dir.compile("attach_target.c");
    let cuda = crate::cuda::build(&dir);
    let mut cmd = Command::new(&prog);
    // The stand-in driver loaded from the start, as a CUDA program has it.
    cmd.env("LD_PRELOAD", cuda.join("libcuda.so.1"))
        .current_dir(&dir.root);
    let running = Running::start(&mut cmd, "attach_target: ready");
    let out = memshim(&[
        "attach".to_string(),
        running.pid().to_string(),
        "--duration".into(),
        "0.5".into(),
        "-o".into(),
        dir.traces().display().to_string(),
    ]);
    let (status, _, _) = running.finish(&dir.root);
    assert_eq!(status, Some(3));
    if out.stderr_str().contains("cannot trace process") {
        println!(
            "skipped: memshim may not ptrace another process here: {}",
            out.stderr_str()
        );
        return;
    }
    assert!(out.status.success(), "{}", out.describe());
    let report = report_json(&dir.traces());
    let p = &processes(&report)[0];
    let findings = p["device"]["findings"].as_array().expect("device findings");
    let unseen: Vec<&Value> = findings
        .iter()
        .filter(|f| f["kind"] == "attached_cuda_unseen")
        .collect();
    assert_eq!(unseen.len(), 1, "{}", dump(p));
    assert_eq!(unseen[0]["severity"], "info");
    let text = unseen[0]["text"].as_str().expect("its text");
    assert!(
        text.starts_with("the CUDA driver was loaded when memshim attached, and its memory calls and copies after attach are not in this trace"),
        "{text}"
    );
    // The first screen says it too.
    let text_report = memshim(&["report".to_string(), dir.traces().display().to_string()]);
    assert!(
        text_report
            .stdout_str()
            .contains("the CUDA driver was loaded when memshim attached"),
        "{}",
        text_report.stdout_str()
    );
}
