//! `memshim attach` to a running CUDA program that fetched its driver entry points before attach
//! (`tests/cuda/programs/attach_copies.c`): the driver's calls after attach reach the shim only
//! through CUPTI's driver-API callbacks (the stand-in libcupti calls back from inside the stand-in
//! driver's functions, as the real CUPTI does). The report holds exactly the device allocations and
//! copies made after attach, with their sites, and the device memory in use at attach; when CUPTI
//! is held by another subscriber, it says precisely that and what it could not see.
use std::process::Command;

use serde_json::Value;

use crate::attach::{attached_until, Running};
use crate::report::*;
use crate::util::*;

/// Starts attach_copies (with `env`), attaches, lets it make its calls, detaches; its report, or
/// `None` when this machine does not let memshim ptrace another process.
fn attached_copies(name: &str, env: &[(&str, &str)]) -> Option<(Value, TestDir)> {
    let dir = TestDir::new(name);
    let bin = crate::cuda::build(&dir);
    let mut cmd = Command::new(bin.join("attach_copies"));
    cmd.env("LD_LIBRARY_PATH", &bin).current_dir(&dir.root);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut running = Running::start(&mut cmd, "attach_copies: ready");
    if !attached_until(
        &mut running,
        &dir.traces(),
        &dir.root,
        &[],
        "attach_copies: done",
    ) {
        let _ = running.finish(&dir.root);
        return None;
    }
    let (status, out, err) = running.finish(&dir.root);
    assert_eq!(status, Some(0), "{out}{err}");
    // Detached, the shim's subscription is gone: the driver calls nobody back.
    assert!(
        out.ends_with("attach_copies: done\nattach_copies: 0 callbacks after detach\n"),
        "{out}"
    );
    // Nothing of memshim's reaches the program's own output.
    assert_eq!(err, "", "the program's stderr");
    let report = report_json(&dir.traces());
    let procs = processes(&report);
    assert_eq!(procs.len(), 1, "one trace: {}", summary(&report));
    Some((procs[0].clone(), dir))
}

/// The info finding of `kind` in the device section.
fn finding<'a>(p: &'a Value, kind: &str) -> &'a Value {
    let found: Vec<&Value> = p["device"]["findings"]
        .as_array()
        .expect("device findings")
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} finding: {}", p["device"]);
    found[0]
}

/// (count, bytes) of the one transfers site of (`func`, direction, host memory).
fn copies(p: &Value, func: &str, direction: &str, host: &str) -> (u64, u64) {
    let rows: Vec<&Value> = p["transfers"]["sites"]
        .as_array()
        .expect("transfers sites")
        .iter()
        .filter(|s| s["direction"] == direction && s["host_memory"] == host)
        .filter(|s| functions(s).contains(&func))
        .collect();
    assert_eq!(
        rows.len(),
        1,
        "{func} {direction} {host}: {}",
        p["transfers"]
    );
    (
        rows[0]["count"].as_u64().expect("count"),
        rows[0]["bytes"].as_u64().expect("bytes"),
    )
}

#[test]
fn attached_the_driver_s_calls_after_attach_are_seen_through_cupti() {
    let Some((p, dir)) = attached_copies("attach_cupti_seen", &[]) else {
        return;
    };
    // The program allocates nothing on the heap after attach: nothing memshim does (its threads,
    // CUPTI, the driver's own work inside a call) is charged to it.
    assert_eq!(p["heap"]["allocations"], 0, "{}", dump(&p));
    let d = &p["device"];
    assert_eq!(d["seen"], true, "{d}");
    // keep_device's two blocks and scratch_device's one; the free of the 3 MiB from before attach
    // is not subtracted from anything.
    assert_eq!(d["allocations"], 3, "{d}");
    assert_eq!(d["frees"], 1, "{d}");
    assert_eq!(d["live_bytes"], 2 * ((1 << 20) + 100), "{d}");
    assert_eq!(
        user_summary(
            &p,
            "device",
            &["keep_device", "scratch_device", "drop_early"]
        ),
        expected(&[("keep_device", 2 * ((1 << 20) + 100), 2)]),
        "{}",
        dump(&p)
    );
    // The site's stack starts at the program's call, not inside the driver or CUPTI.
    let site = site_with(&p, "device", "keep_device");
    assert_eq!(
        functions(site).first().copied(),
        Some("keep_device"),
        "{site}"
    );
    assert_source_frame(site, 0, "keep_device", "attach_copies.c");
    // Exactly the copies made after attach, by direction and host memory.
    assert_eq!(copies(&p, "upload", "HtoD", "pageable"), (4, 1 << 20));
    assert_eq!(copies(&p, "download", "DtoH", "pageable"), (1, 64 << 10));
    let rows: Vec<(String, u64, u64)> = p["transfers"]["summary"]
        .as_array()
        .expect("summary")
        .iter()
        .map(|r| {
            (
                format!(
                    "{} {}",
                    r["direction"].as_str().unwrap_or("?"),
                    r["host_memory"].as_str().unwrap_or("?")
                ),
                r["count"].as_u64().unwrap_or(0),
                r["bytes"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("HtoD pageable".to_string(), 4, 1 << 20),
            ("DtoH pageable".to_string(), 1, 64 << 10)
        ]
    );
    // What was in use at attach: the stand-in counts exactly the program's 3 MiB.
    let start = finding(&p, "attached_cuda_start");
    assert_eq!(start["severity"], "info");
    assert_eq!(start["bytes"], 3 << 20);
    let text = start["text"].as_str().expect("its text");
    assert!(
        text.contains("through CUPTI's callbacks (")
            && text.contains("libcupti.so (CUPTI API version 130001)")
            && text.contains("3.0 MiB were already allocated at attach: 3.0 MiB on GPU 0 (in use on the device by every process, by cuMemGetInfo, of 80.0 GiB)"),
        "{text}"
    );
    assert!(
        d["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .all(|f| f["kind"] != "attached_cuda_unseen"),
        "{d}"
    );
    // The text report says so on its first screen, with the device section's lines.
    let text_report = memshim(&["report".to_string(), dir.traces().display().to_string()]);
    let out = text_report.stdout_str();
    assert!(
        out.contains("3.0 MiB were already allocated at attach"),
        "{out}"
    );
}

#[test]
fn attached_while_another_tool_holds_cupti_the_report_says_what_it_could_not_see() {
    let Some((p, _dir)) = attached_copies("attach_cupti_held", &[("HOLD_CUPTI", "1")]) else {
        return;
    };
    assert_eq!(p["device"]["seen"], false, "{}", p["device"]);
    let unseen = finding(&p, "attached_cuda_unseen");
    let text = unseen["text"].as_str().expect("its text");
    assert!(
        text.starts_with("memshim was attached to a process with the CUDA driver loaded, and the driver's memory calls and copies after attach are not in this trace: CUPTI's driver callbacks, which see them, could not be used: cuptiSubscribe failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another tool holds CUPTI's callbacks")
            && text.contains("so device memory, copies and pinned host memory are not shown")
            && text.ends_with("3.0 MiB were already allocated at attach: 3.0 MiB on GPU 0 (in use on the device by every process, by cuMemGetInfo, of 80.0 GiB)"),
        "{text}"
    );
    assert_eq!(unseen["bytes"], 3 << 20);
    assert_eq!(p["transfers"]["summary"].as_array().map(Vec::len), Some(0));
}
