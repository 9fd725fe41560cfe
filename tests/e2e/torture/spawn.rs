//! New processes: fork in a busy multi-threaded program, vfork + exec, posix_spawn, and children
//! made with the raw `clone` and `fork` system calls (no fork handler runs in them).
use super::build::c;
use super::harness::{assert_same, leaks_by_function, Case, Via};
use crate::report::*;

const NO_ARGS: [&str; 0] = [];

#[test]
fn fork_while_threads_allocate() {
    let case = Case::new("fork_busy", &c("fork_busy"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "children 4 ok 4\n");
    let funcs = ["child_leak", "parent_leak"];
    for report in case.reports() {
        let procs = processes_by_exe(&report, "fork_busy");
        assert_eq!(
            procs.len(),
            5,
            "parent and 4 children:\n{}",
            summary(&report)
        );
        let parent: Vec<_> = procs.iter().filter(|p| p["forked"] == false).collect();
        assert_eq!(parent.len(), 1, "{}", summary(&report));
        assert_eq!(
            leaks_by_function(parent[0], &funcs),
            expected(&[("parent_leak", 123, 1)]),
            "{}",
            dump(parent[0])
        );
        for child in procs.iter().filter(|p| p["forked"] == true) {
            assert_eq!(child["ppid"], parent[0]["pid"], "{}", dump(child));
            assert_eq!(child["end"], "exit", "{}", dump(child));
            assert_eq!(
                leaks_by_function(child, &funcs),
                expected(&[("child_leak", 321, 1)]),
                "{}",
                dump(child)
            );
        }
    }
}

/// `spawn_child WAY alloc_many`: the parent's leak, and the child's own trace with its leak.
fn spawned(way: &str, child_exe: &str, child_leak: (&str, u64, u64), child_output: &str) {
    let target = c("alloc_many");
    let case = Case::new(
        &format!("spawn_{way}"),
        &c("spawn_child"),
        &[way, target.to_str().expect("utf-8 path")],
    );
    let bare = case.all();
    assert_eq!(bare.stdout_str(), format!("{child_output}{way} status 0\n"));
    let funcs = ["parent_leak", "clone_child_leak", "target_leak"];
    for report in case.reports() {
        let all = processes_by_exe(&report, "spawn_child");
        let parents: Vec<_> = all.iter().filter(|p| p["forked"] == false).collect();
        assert_eq!(parents.len(), 1, "{}", summary(&report));
        let parent = parents[0];
        assert_eq!(
            leaks_by_function(parent, &funcs),
            expected(&[("parent_leak", 333, 1)]),
            "{}",
            dump(parent)
        );
        let children: Vec<_> = processes_by_exe(&report, child_exe)
            .into_iter()
            .filter(|p| p["pid"] != parent["pid"] && p["end"] != "exec")
            .collect();
        assert_eq!(
            children.len(),
            1,
            "one child {child_exe} with its own trace:\n{}",
            summary(&report)
        );
        let child = children[0];
        assert_eq!(child["ppid"], parent["pid"], "{}", dump(child));
        assert_eq!(child["end"], "exit", "{}", dump(child));
        assert_eq!(child["truncated"], false, "{}", dump(child));
        assert_eq!(
            leaks_by_function(child, &funcs),
            expected(&[child_leak]),
            "{}",
            dump(child)
        );
    }
}

#[test]
fn vfork_and_exec() {
    spawned(
        "vfork",
        "alloc_many",
        ("target_leak", 444, 1),
        "alloc_many 1\n",
    );
}

#[test]
fn posix_spawn_child() {
    spawned(
        "posix_spawn",
        "alloc_many",
        ("target_leak", 444, 1),
        "alloc_many 1\n",
    );
}

#[test]
fn raw_clone_child_that_allocates() {
    spawned("clone", "spawn_child", ("clone_child_leak", 555, 1), "");
}

#[test]
fn sys_fork_child_that_allocates() {
    spawned("sys_fork", "spawn_child", ("clone_child_leak", 555, 1), "");
}

#[test]
fn popen_and_system() {
    let case = Case::new("popen_system", &c("popen_system"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(
        bare.stdout_str(),
        "read: from the child\npclose 0\nsystem 3\n"
    );
    for report in case.reports() {
        let parents: Vec<_> = processes_by_exe(&report, "popen_system")
            .into_iter()
            .filter(|p| p["forked"] == false)
            .collect();
        assert_eq!(parents.len(), 1, "{}", summary(&report));
        let p = parents[0];
        assert_eq!(p["truncated"], false, "{}", dump(p));
        assert_eq!(
            leaks_by_function(p, &["parent_leak"]),
            expected(&[("parent_leak", 222, 1)]),
            "{}",
            dump(p)
        );
        // Both shells are traced processes of their own and end normally.
        let shells: Vec<_> = processes(&report)
            .iter()
            .filter(|q| q["exe"].as_str().is_some_and(|e| e.ends_with("sh")))
            .collect();
        assert!(shells.len() >= 2, "{}", summary(&report));
        for sh in shells {
            assert_eq!(sh["truncated"], false, "{}", dump(sh));
        }
    }
}

/// The vfork child's blocks live in the parent's heap (the child borrowed it): they are the parent's.
#[test]
fn vfork_child_that_allocates_before_exec() {
    let target = c("alloc_many");
    let case = Case::new(
        "vfork_alloc",
        &c("vfork_alloc"),
        &[target.to_str().expect("utf-8 path")],
    );
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "alloc_many 1\nvfork status 0\n");
    for report in case.reports() {
        let parent = process_by_exe(&report, "vfork_alloc");
        assert_eq!(parent["truncated"], false, "{}", dump(parent));
        assert_eq!(
            leaks_by_function(parent, &["parent_leak", "child_arg"]),
            expected(&[("child_arg", 800, 8), ("parent_leak", 333, 1)]),
            "{}",
            dump(parent)
        );
        let child = process_by_exe(&report, "alloc_many");
        assert_eq!(
            leaks_by_function(child, &["target_leak"]),
            expected(&[("target_leak", 444, 1)]),
            "{}",
            dump(child)
        );
    }
}

/// `daemon`'s child detaches and goes on after the command ended: its trace must still be whole.
#[test]
fn daemon_child_outlives_the_command() {
    let prog = c("daemon");
    let case = Case::new("daemon", &prog, &NO_ARGS);
    let done = case.dir.path("done");
    // The daemon writes its file before it exits, and its trace is finished at that exit: wait
    // until no process runs this program any more, so the report reads a whole trace.
    let running = || {
        std::fs::read_dir("/proc").is_ok_and(|dir| {
            dir.flatten()
                .any(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == prog))
        })
    };
    let wait_done = || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !done.exists() || running() {
            assert!(
                std::time::Instant::now() < until,
                "the daemon never finished"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::fs::remove_file(&done).expect("remove the daemon's file");
    };
    let bare = case.bare();
    wait_done();
    assert_eq!(bare.stdout_str(), "parent done\n");
    let run = case.run();
    wait_done();
    assert_same(&bare, &run, Via::Run);
    let preload = case.preload();
    wait_done();
    assert_same(&bare, &preload, Via::Preload);
    for report in case.reports() {
        let procs = processes_by_exe(&report, "daemon");
        assert_eq!(procs.len(), 2, "{}", summary(&report));
        for p in procs {
            let want = if p["forked"] == true {
                ("daemon_leak", 555, 1)
            } else {
                ("parent_leak", 111, 1)
            };
            assert_eq!(p["truncated"], false, "{}", dump(p));
            assert_eq!(p["end"], "exit", "{}", dump(p));
            let funcs = ["daemon_leak", "parent_leak"];
            assert_eq!(
                leaks_by_function(p, &funcs),
                expected(&[want]),
                "{}",
                dump(p)
            );
        }
    }
}
