//! Growth given back before the end, in host memory: a site that climbed for most of a stretch and
//! was then freed is reported with when it grew, how far, and when it was released.
use std::ffi::OsStr;

use crate::report::{dump, process_by_exe};
use crate::util::{memshim, traced, TestDir};

const NO_ARGS: [&str; 0] = [];

#[test]
fn host_growth_given_back_is_reported_with_when_it_ended() {
    let dir = TestDir::new("host_growth_given_back");
    let prog = dir.compile("grow_release.c");
    let (_out, report) = traced(&dir, &prog, &NO_ARGS);
    let p = process_by_exe(&report, "grow_release");
    let g = &p["growth"];
    let named = |v: &serde_json::Value| {
        v["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .any(|f| f["function"] == "keep_step")
    };
    assert!(
        !g["host"].as_array().expect("host").iter().any(named),
        "not growing at the end: {}",
        dump(p)
    );
    let released: Vec<&serde_json::Value> = g["released"]
        .as_array()
        .expect("released")
        .iter()
        .filter(|r| named(r))
        .collect();
    assert_eq!(released.len(), 1, "{}", dump(p));
    let r = released[0];
    assert_eq!(r["memory"], "host");
    assert_eq!(r["frames"][0]["function"], "keep_step");
    assert_eq!(r["from_bytes"], 262144);
    assert_eq!(r["peak_bytes"], 7864320);
    assert_eq!(r["live_bytes"], 0);
    let at = |k: &str| r[k].as_f64().expect(k);
    // 29 steps of 10 ms between the first high and the peak; released just after it.
    assert!(at("peak_time_s") - at("from_time_s") > 0.25, "{r}");
    assert!(at("released_time_s") >= at("peak_time_s"), "{r}");
    assert!(at("released_time_s") - at("peak_time_s") < 0.1, "{r}");
    let text = memshim(&[
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("text"),
        dir.traces().as_os_str(),
    ])
    .stdout_str();
    assert!(
        text.contains("released growth #1 (host): 256.0 KiB at "),
        "{text}"
    );
    assert!(text.contains("host memory at keep_step ("), "{text}");
}
