//! The report's flame trees (`processes[].flame`) and `memshim export --flamegraph`, the same trees
//! drawn by inferno: exact bytes of known frames, Python frames as `function (file:line)` with the
//! interpreter's own frames left out.
use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::python::{interpreters, run_python};
use crate::report::report_json;
use crate::util::*;

/// The node reached from the tree's root through frames named `path`.
fn node<'a>(tree: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let nodes = tree["nodes"].as_array()?;
    let mut parent = Value::Null;
    let mut found = None;
    for name in path {
        let (i, n) = nodes
            .iter()
            .enumerate()
            .find(|(_, n)| n["parent"] == parent && n["name"] == *name)?;
        parent = Value::from(i);
        found = Some(n);
    }
    found
}

/// Every frame name in a tree.
fn names(tree: &Value) -> Vec<String> {
    tree["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n["name"].as_str().expect("a name").to_string())
        .collect()
}

#[test]
fn export_flamegraph_draws_the_reports_tree_with_each_frames_bytes_in_its_title() {
    let dir = TestDir::new("export_flamegraph_draws_the_reports_tree");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let report = report_json(&dir.traces());
    let p = &report["processes"][0];
    let pid = p["pid"].as_u64().expect("pid");
    let svg_of = |by: &str| {
        let file = dir.path(&format!("{by}.svg"));
        run_ok(
            memshim_cmd()
                .args(["export", "--by", by, "--flamegraph"])
                .arg(&file)
                .arg(dir.traces()),
        );
        std::fs::read_to_string(&file).expect("the SVG")
    };
    let leaked = svg_of("leaked");
    assert!(
        leaked.starts_with("<?xml") && leaked.contains("<svg"),
        "{}",
        &leaked[..200]
    );
    let total = p["flame"]["leaked"]["bytes"].as_u64().expect("bytes");
    let title = |name: &str, bytes: u64| {
        let pct = 100.0 * bytes as f64 / total as f64;
        let digits = bytes.to_string();
        // inferno writes thousands with commas.
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("<title>{name} ({grouped} bytes, {pct:.2}%)</title>")
    };
    // leaky.c's own functions, leak_aligned's four sites merged into one frame.
    for (name, bytes) in [
        ("leak_aligned", 4772),
        ("leak_malloc", 300),
        ("grow_buffer", 256),
        ("leak_calloc", 100),
        ("leak_strdup", 12),
    ] {
        assert!(
            leaked.contains(&title(name, bytes)),
            "no {}",
            title(name, bytes)
        );
    }
    // The process is the root frame, with the whole tree, and main what the report's tree says.
    assert!(leaked.contains(&title(&format!("leaky (pid {pid})"), total)));
    let main = node(&p["flame"]["leaked"], &["main"]).expect("main in the report's tree");
    assert!(leaked.contains(&title("main", main["bytes"].as_u64().expect("bytes"))));
    assert!(
        !leaked.contains("__libc_start_call_main"),
        "start-up frames are hidden"
    );
    // Weighted by what was allocated, churn's 1000 blocks freed as they went count too.
    let allocated = svg_of("allocated");
    assert!(
        allocated.contains("<title>churn (1,472,500 bytes, "),
        "no churn"
    );
    // A trace named after the flag by mistake is never overwritten.
    let traces = trace_files(&dir.traces());
    let out = memshim_cmd()
        .args(["export", "--flamegraph"])
        .arg(&traces[0])
        .arg(dir.traces())
        .output()
        .expect("memshim runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("name it with .svg"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report_json(&dir.traces())["processes"][0]["pid"] == pid);
}

#[test]
fn python_frames_in_the_flame_tree_are_functions_with_file_and_line() {
    let python = &interpreters()[0];
    let dir = TestDir::new("flame_tree_python");
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python/leaks/small_objects.py");
    std::fs::copy(src, dir.root.join("small_objects.py")).expect("copy the script");
    run_python(
        &dir,
        &dir.traces(),
        &["--python-malloc"],
        python,
        &[OsStr::new("small_objects.py")],
        &[],
    );
    let report = report_json(&dir.traces());
    let tree = &report["processes"][0]["flame"]["leaked"];
    let all = names(tree);
    // The module's line 15 called small_objects, whose line 11 made 1000 objects of 233 bytes;
    // the interpreter's evaluation loop between them is left out.
    let module = "<module> (small_objects.py:15)";
    let line = node(tree, &[module, "small_objects (small_objects.py:11)"])
        .unwrap_or_else(|| panic!("no small_objects.py:11 under {module}: {all:?}"));
    assert_eq!(line["kind"], "python");
    assert_eq!(line["bytes"], 1000 * 233);
    assert_eq!(line["blocks"], 1000);
    for hidden in ["_PyEval_EvalFrameDefault", "PyEval_EvalCode", "_start"] {
        assert!(
            !all.iter().any(|n| n == hidden),
            "{hidden} is shown: {all:?}"
        );
    }
}
