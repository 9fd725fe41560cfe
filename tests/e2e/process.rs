//! Process lifecycle: fork, exec, dlopen/dlclose, exit status and output, death by SIGKILL.
use crate::report::*;
use crate::util::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn fork_traces_parent_and_child() {
    let dir = TestDir::new("fork_traces_parent_and_child");
    let prog = dir.compile("fork.c");
    let (_, report) = traced(&dir, &prog, &NO_ARGS);
    let procs = processes_by_exe(&report, "fork");
    assert_eq!(procs.len(), 2, "parent and child:\n{}", summary(&report));
    let (parent, child) = (procs[0], procs[1]);
    assert_eq!(
        parent["forked"],
        false,
        "the parent starts first:\n{}",
        summary(&report)
    );
    assert_eq!(child["forked"], true, "{}", dump(child));
    assert_eq!(child["ppid"], parent["pid"], "the child's parent");
    for p in [parent, child] {
        assert_eq!(p["end"], "exit", "{}", dump(p));
        assert_eq!(p["truncated"], false, "{}", dump(p));
    }
    let funcs = ["parent_leak", "child_leak"];
    assert_eq!(
        user_summary(parent, "host", &funcs),
        expected(&[("parent_leak", 111, 1)]),
        "\n{}",
        dump(parent)
    );
    assert_eq!(
        user_summary(child, "host", &funcs),
        expected(&[("child_leak", 222, 1)]),
        "\n{}",
        dump(child)
    );
    assert_source_frame(
        site_with(parent, "host", "parent_leak"),
        0,
        "parent_leak",
        "fork.c",
    );
    assert_source_frame(
        site_with(child, "host", "child_leak"),
        0,
        "child_leak",
        "fork.c",
    );
}

#[test]
fn exec_target_traced() {
    let dir = TestDir::new("exec_target_traced");
    let prog = dir.compile("exec.c");
    let target = dir.compile("exec_target.c");
    let (_, report) = traced(&dir, &prog, &[&target]);
    let funcs = ["before_exec", "target_leak"];

    let execs = processes_by_exe(&report, "exec");
    let parents: Vec<_> = execs.iter().filter(|p| p["forked"] == false).collect();
    assert_eq!(parents.len(), 1, "one exec parent:\n{}", summary(&report));
    let parent = parents[0];
    assert_eq!(parent["end"], "exit", "{}", dump(parent));
    assert_eq!(
        user_summary(parent, "host", &funcs),
        expected(&[("before_exec", 333, 1)]),
        "\n{}",
        dump(parent)
    );

    // The forked child allocates nothing between fork and exec; if it has a trace, it ends in exec.
    let children: Vec<_> = execs.iter().filter(|p| p["forked"] == true).collect();
    assert!(children.len() <= 1, "{}", summary(&report));
    for child in &children {
        assert_eq!(child["end"], "exec", "{}", dump(child));
        assert!(
            user_sites(child, "host", &funcs).is_empty(),
            "{}",
            dump(child)
        );
    }

    let t = process_by_exe(&report, "exec_target");
    assert_eq!(
        t["ppid"],
        parent["pid"],
        "exec_target's parent is exec:\n{}",
        summary(&report)
    );
    if let Some(child) = children.first() {
        assert_eq!(t["pid"], child["pid"], "exec keeps the pid");
    }
    assert_eq!(
        t["argv"],
        serde_json::json!([target.to_str().expect("utf-8 path")])
    );
    assert_eq!(t["end"], "exit", "{}", dump(t));
    assert_eq!(
        user_summary(t, "host", &funcs),
        expected(&[("target_leak", 444, 1)]),
        "\n{}",
        dump(t)
    );
    assert_source_frame(
        site_with(t, "host", "target_leak"),
        0,
        "target_leak",
        "exec_target.c",
    );

    let order: Vec<&str> = processes(&report)
        .iter()
        .filter_map(|p| p["exe"].as_str())
        .collect();
    let pos = |name: &str| order.iter().position(|e| e.ends_with(name));
    assert!(
        pos("/exec") < pos("/exec_target"),
        "processes by start time: {order:?}"
    );
}

#[test]
fn dlopen_unloaded_library_symbolized() {
    let dir = TestDir::new("dlopen_unloaded_library_symbolized");
    let lib = dir.compile_with(
        "libleaky.c",
        "libleaky.so",
        &["-shared", "-fPIC", "-g", "-O0"],
    );
    let prog = dir.compile_with("dlopen_main.c", "dlopen_main", &["-g", "-O0", "-ldl"]);
    let (_, report) = traced(&dir, &prog, &[&lib]);
    let p = process_by_exe(&report, "dlopen_main");
    assert_eq!(
        user_summary(p, "host", &["lib_leak"]),
        expected(&[("lib_leak", 555, 1)]),
        "\n{}",
        dump(p)
    );
    let site = site_with(p, "host", "lib_leak");
    assert_source_frame(site, 0, "lib_leak", "libleaky.c");
    let module = frame(site, 0)["module"].as_str().unwrap_or("");
    assert!(
        module.ends_with("/libleaky.so"),
        "lib_leak's module: {module}"
    );
    assert_source_frame(site, 1, "main", "dlopen_main.c");
}

#[test]
fn exitcode_output_and_status_unchanged() {
    let dir = TestDir::new("exitcode_output_and_status_unchanged");
    let prog = dir.compile("exitcode.c");
    let bare = run_bare(&dir.root, &prog, &NO_ARGS);
    assert_eq!(bare.stdout, b"hello from exitcode\n", "{}", bare.describe());
    assert_eq!(bare.stderr, b"err line\n", "{}", bare.describe());
    assert_eq!(bare.status.code(), Some(3), "{}", bare.describe());

    let traced_run = memshim_run(&dir, &prog, &NO_ARGS);
    // Strings first for a readable diff, then the exact bytes.
    assert_eq!(
        traced_run.stdout_str(),
        bare.stdout_str(),
        "stdout under memshim"
    );
    assert_eq!(
        traced_run.stderr_str(),
        bare.stderr_str(),
        "stderr under memshim"
    );
    assert_eq!(traced_run.stdout, bare.stdout, "stdout bytes under memshim");
    assert_eq!(traced_run.stderr, bare.stderr, "stderr bytes under memshim");
    assert_eq!(
        traced_run.status.code(),
        Some(3),
        "{}",
        traced_run.describe()
    );

    assert_eq!(
        trace_files(&dir.traces()).len(),
        1,
        "one trace in {}",
        dir.traces().display()
    );
    let report = report_json(&dir.traces());
    let p = process_by_exe(&report, "exitcode");
    assert_eq!(p["end"], "exit", "{}", dump(p));
    assert_eq!(p["truncated"], false, "{}", dump(p));
}

#[test]
fn sigkill_trace_truncated_but_symbolized() {
    let dir = TestDir::new("sigkill_trace_truncated_but_symbolized");
    let prog = dir.compile("sigkill.c");
    let out = memshim_run(&dir, &prog, &NO_ARGS);
    assert_eq!(
        out.status.code(),
        Some(137),
        "128 + SIGKILL: {}",
        out.describe()
    );
    let files = trace_files(&dir.traces());
    assert_eq!(files.len(), 1, "one trace: {files:?}");

    // Report the file itself (the directory form is covered by the other tests).
    let report = report_json(&files[0]);
    let p = process_by_exe(&report, "sigkill");
    assert_eq!(p["truncated"], true, "{}", dump(p));
    assert!(
        p["end"].is_null(),
        "a killed process has no end: {}",
        dump(p)
    );
    assert_eq!(
        user_summary(p, "host", &["doomed_leak"]),
        expected(&[("doomed_leak", 8991, 9)]),
        "\n{}",
        dump(p)
    );
    let site = site_with(p, "host", "doomed_leak");
    assert_source_frame(site, 0, "doomed_leak", "sigkill.c");
    assert_source_frame(site, 1, "main", "sigkill.c");
    let reported = std::path::Path::new(p["trace"].as_str().unwrap_or("")).canonicalize();
    let actual = files[0]
        .canonicalize()
        .expect("the trace file's canonical path");
    assert_eq!(reported.ok(), Some(actual), "trace path: {}", p["trace"]);
}

/// `memshim run` names every frame right after the command ends (out of its processes), so a report
/// made after the binary is gone, as with test binaries in temporary directories, still has names.
#[test]
fn frames_are_named_even_after_the_binary_is_deleted() {
    let dir = TestDir::new("frames_are_named_even_after_the_binary_is_deleted");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &NO_ARGS);
    std::fs::remove_file(&prog).expect("delete the binary");
    let report = report_json(&dir.traces());
    let p = process_by_exe(&report, "leaky");
    let site = site_with(p, "host", "leak_malloc");
    assert_eq!(bytes_count(site), (300, 3));
    assert!(
        p["notes"].as_array().expect("notes").iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("added by memshim run"))),
        "{}",
        dump(p)
    );
}

/// The symbol records `memshim info` counts in one trace.
fn symbol_records(trace: &str) -> u64 {
    let info = run_ok(memshim_cmd().arg("info").arg(trace));
    String::from_utf8_lossy(&info.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("symbols ")?.trim().parse().ok())
        .unwrap_or(0)
}

/// Under a bare `LD_PRELOAD` the parent names its frames at exit; a fork child leaves its frames,
/// its parent's modules, to the report (naming them again in every child made a program forking 50
/// children 30 times slower) unless `MEMSHIM_SYMBOLIZE=1` asks for it by name. The report names
/// both either way.
#[test]
fn a_fork_child_leaves_naming_to_the_report_unless_asked() {
    let shim = artifacts().memshim.with_file_name("libmemshim.so");
    for (setting, child_names) in [(None, false), (Some("1"), true)] {
        let dir = TestDir::new(&format!(
            "a_fork_child_leaves_naming_to_the_report_{}",
            setting.unwrap_or("by_default")
        ));
        let prog = dir.compile("fork.c");
        let mut cmd = std::process::Command::new(&prog);
        cmd.env("LD_PRELOAD", &shim)
            .env("MEMSHIM_OUTPUT", dir.traces())
            .env("MEMSHIM_QUIET", "1");
        if let Some(v) = setting {
            cmd.env("MEMSHIM_SYMBOLIZE", v);
        }
        run_ok(&mut cmd);
        let report = report_json(&dir.traces());
        let procs = processes_by_exe(&report, "fork");
        assert_eq!(procs.len(), 2, "parent and child:\n{}", summary(&report));
        let (parent, child) = (procs[0], procs[1]);
        assert_eq!(child["forked"], true, "{}", dump(child));
        let named = |p: &serde_json::Value| symbol_records(p["trace"].as_str().unwrap_or("")) > 0;
        assert!(
            named(parent),
            "the parent names its frames: {}",
            dump(parent)
        );
        assert_eq!(named(child), child_names, "{setting:?}: {}", dump(child));
        assert_eq!(
            user_summary(child, "host", &["child_leak"]),
            expected(&[("child_leak", 222, 1)]),
            "\n{}",
            dump(child)
        );
        assert_source_frame(
            site_with(child, "host", "child_leak"),
            0,
            "child_leak",
            "fork.c",
        );
    }
}
