//! `memshim attach` to a process that had the CUDA driver loaded. With no CUPTI to be found, the
//! trace cannot see the driver calls made after attach (the runtime fetched its entry points long
//! before), and the report says why instead of showing an empty device section. PyTorch's allocator,
//! already loaded, gets its trace tracker at attach, so the tensors allocated after attach are seen.
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::attach::{attached_until, Running};
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
    // No libcupti where the process or memshim would look: what could not be used, and why.
    assert!(
        text.starts_with("memshim was attached to a process with the CUDA driver loaded, and the driver's memory calls and copies after attach are not in this trace: CUPTI's driver callbacks, which see them, could not be used: libcupti.so was not found (set MEMSHIM_CUPTI_LIB to its path"),
        "{text}"
    );
    // The first screen says it too.
    let text_report = memshim(&["report".to_string(), dir.traces().display().to_string()]);
    assert!(
        text_report
            .stdout_str()
            .contains("memshim was attached to a process with the CUDA driver loaded"),
        "{}",
        text_report.stdout_str()
    );
}

/// Runs tests/cuda/python/torch_attach.py (with `env`) against the stand-in PyTorch, attaches with
/// `attach_env` until it kept its tensors, detaches; its process report, or `None` when this machine
/// does not let memshim ptrace another process.
fn attached_torch(name: &str, env: &[(&str, &str)], attach_env: &[(&str, &str)]) -> Option<Value> {
    let python = crate::python::interpreters()
        .into_iter()
        .next()
        .expect("a CPython interpreter");
    let dir = TestDir::new(name);
    let bin = crate::cuda::build(&dir);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda/python/torch_attach.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("LD_LIBRARY_PATH", &bin)
        .env("STANDIN_CUDA_MEM_BYTES", "256M")
        .env("STANDIN_TORCH_LIB", bin.join("torch/lib/libc10_cuda.so"))
        .current_dir(&dir.root);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut running = Running::start(&mut cmd, "torch_attach: ready");
    if !attached_until(
        &mut running,
        &dir.traces(),
        &dir.root,
        attach_env,
        "torch_attach: kept",
    ) {
        let _ = running.finish(&dir.root);
        return None;
    }
    let (status, _, err) = running.finish(&dir.root);
    assert_eq!(status, Some(0), "{err}");
    let report = report_json(&dir.traces());
    Some(processes(&report)[0].clone())
}

/// Tensors held at the end: (bytes, count), and the first site's innermost Python frame
/// (function, line).
type Held = ((Option<u64>, Option<u64>), Option<(String, u64)>);

/// The torch section's tensors held at the end.
fn held_tensors(p: &Value) -> Held {
    let t = &p["torch"];
    assert_eq!(t["state"], "on", "{t}");
    let held = &t["held_at_end"];
    let frames = crate::python::python_frames(&held["sites"][0]);
    (
        (held["bytes"].as_u64(), held["count"].as_u64()),
        frames.first().map(|f| (f.0.clone(), f.2)),
    )
}

#[test]
fn attached_to_a_pytorch_program_its_tensors_after_attach_are_seen() {
    let Some(p) = attached_torch("attach_torch_tensors", &[], &[]) else {
        return;
    };
    // The three tensors kept after attach; the 1 MiB from before is not known.
    assert_eq!(
        held_tensors(&p),
        (
            (Some(3 * ((2 << 20) + 10)), Some(3)),
            Some(("keep".to_string(), 25))
        ),
        "{}",
        dump(&p)
    );
    // The stand-in libcupti is on the library path: the allocator's one driver allocation after
    // attach (a 20 MiB segment for the three tensors) is seen through CUPTI's callbacks, from the
    // allocator's own frame, and the 2 MiB segment from before attach is the starting point.
    let d = &p["device"];
    assert_eq!(
        (d["allocations"].as_u64(), d["live_bytes"].as_u64()),
        (Some(1), Some(20 << 20)),
        "{d}"
    );
    let segment = &sites(&p, "device")[0];
    assert_eq!(
        functions(segment).first().copied(),
        Some("standin::Allocator::malloc(unsigned long)"),
        "{segment}"
    );
    let start: Vec<&Value> = d["findings"]
        .as_array()
        .expect("device findings")
        .iter()
        .filter(|f| f["kind"] == "attached_cuda_start")
        .collect();
    assert_eq!(start.len(), 1, "{d}");
    assert_eq!(start[0]["bytes"], 2 << 20, "{}", start[0]);
}

#[test]
fn a_pytorch_library_loaded_after_attach_gets_the_trace_tracker() {
    // CUPTI kept out, so no driver allocation reaches the shim: only the library's load, seen at
    // the program's next dlsym, can lead the shim to the allocator.
    let Some(p) = attached_torch(
        "attach_torch_loaded_late",
        &[("LOAD_LATE", "1")],
        &[("MEMSHIM_CUPTI_LIB", "/nonexistent/libcupti.so")],
    ) else {
        return;
    };
    assert_eq!(
        held_tensors(&p),
        (
            (Some(3 * ((2 << 20) + 10)), Some(3)),
            Some(("keep".to_string(), 25))
        ),
        "{}",
        dump(&p)
    );
    let unseen: Vec<&str> = p["device"]["findings"]
        .as_array()
        .expect("device findings")
        .iter()
        .filter(|f| f["kind"] == "attached_cuda_unseen")
        .filter_map(|f| f["text"].as_str())
        .collect();
    assert_eq!(unseen.len(), 1, "{}", p["device"]);
    assert!(
        unseen[0].contains("could not be used: cannot load MEMSHIM_CUPTI_LIB=/nonexistent/libcupti.so; so device memory, copies and pinned host memory are not shown"),
        "{}",
        unseen[0]
    );
}
