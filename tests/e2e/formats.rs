//! Report formats: Markdown for bug reports, and `--redact` for every format.
use std::process::Command;

use serde_json::Value;

use crate::report::expected;
use crate::util::*;

fn report(dir: &TestDir, args: &[&str], home: &std::path::Path) -> String {
    let out = run_ok(
        memshim_cmd()
            .arg("report")
            .args(args)
            .arg(dir.traces())
            .env("HOME", home)
            .env("USER", "memshim-test-user"),
    );
    String::from_utf8(out.stdout).expect("utf-8 report")
}

#[test]
fn markdown_has_tables_of_the_leak_sites_and_folds_the_rest() {
    let dir = TestDir::new("markdown_has_tables_of_the_leak_sites_and_folds_the_rest");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &["an-argument"]);
    let md = report(&dir, &["--format", "markdown", "--top", "3"], &dir.root);
    assert!(md.starts_with("# memshim report\n"), "{md}");
    // The overview names the process by its command: the program and its first argument.
    assert!(md.contains("| `leaky an-argument` |"), "{md}");
    assert!(md.contains("### Host heap"), "{md}");
    // Top 3 in the table, the rest folded; each site ends at main.
    assert!(
        md.contains("| 4.0 KiB | 1 | `leak_aligned` (leaky.c:"),
        "{md}"
    );
    assert!(md.contains("<details><summary>"), "{md}");
    assert!(md.contains("| 300 B | 3 | `leak_malloc` (leaky.c:"), "{md}");
    assert!(!md.contains("__libc_start_call_main"), "{md}");
    assert!(md.len() < 8000, "{} bytes", md.len());
}

#[test]
fn redact_hides_home_user_host_and_arguments_in_every_format() {
    let dir = TestDir::new("redact_hides_home_user_host_and_arguments_in_every_format");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &["secret-argument"]);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    let host = host.trim();
    // The test directory plays the user's home.
    let json = report(&dir, &["--format", "json", "--redact"], &dir.root);
    let md = report(&dir, &["--format", "markdown", "--redact"], &dir.root);
    let text = report(&dir, &["--redact"], &dir.root);
    for out in [&json, &md, &text] {
        assert!(!out.contains("secret-argument"));
        assert!(
            !out.contains(dir.root.to_str().expect("utf-8")),
            "home not hidden"
        );
        if host.len() > 3 {
            assert!(
                !out.contains(&format!("\"{host}\"")),
                "host name not hidden"
            );
        }
    }
    let v: Value = crate::report::unpack(serde_json::from_str(&json).expect("JSON"));
    let p = &v["processes"][0];
    assert_eq!(p["hostname"], "<host>");
    assert_eq!(
        p["argv"],
        serde_json::json!(["~/leaky", "<1 argument redacted>"])
    );
    assert_eq!(p["exe"], "~/leaky");
    // The unredacted report still has everything.
    let plain = report(&dir, &["--format", "json"], &dir.root);
    assert!(plain.contains("secret-argument"));
}

#[test]
fn collapsed_stacks_for_flame_graphs_by_leaked_and_allocated_bytes() {
    let dir = TestDir::new("collapsed_stacks_for_flame_graphs_by_leaked_and_allocated_bytes");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let export = |by: &str| -> Vec<String> {
        let out = run_ok(
            memshim_cmd()
                .args(["export", "--collapsed", "--by", by])
                .arg(dir.traces()),
        );
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .map(str::to_string)
            .collect()
    };
    let leaked = export("leaked");
    // Root first, leaf last, weight after the last space.
    let line = leaked
        .iter()
        .find(|l| l.ends_with(";main;leak_malloc 300"))
        .unwrap_or_else(|| panic!("no leak_malloc line in {leaked:#?}"));
    assert!(line.starts_with("leaky ("), "{line}");
    assert!(
        leaked.iter().all(|l| !l.contains(";churn ")),
        "churn leaks nothing"
    );
    let allocated = export("allocated");
    assert!(
        allocated.iter().any(|l| l.contains(";main;churn ")),
        "{allocated:#?}"
    );
    assert!(allocated.len() > leaked.len());
    for l in leaked.iter().chain(&allocated) {
        let (stack, weight) = l.rsplit_once(' ').expect("a weight");
        assert!(weight.parse::<u64>().is_ok_and(|w| w > 0), "{l}");
        assert!(stack.split(';').count() >= 2, "{l}");
    }
}

#[test]
fn diff_shows_the_site_a_fix_removed() {
    let dir = TestDir::new("diff_shows_the_site_a_fix_removed");
    let prog = dir.compile("fixable.c");
    let run = |arg: &str, out: &str| {
        run_ok(
            memshim_cmd()
                .args(["run", "--quiet", "-o"])
                .arg(dir.path(out))
                .arg("--")
                .arg(&prog)
                .arg(arg),
        );
    };
    run("10", "before");
    run("0", "after");
    let out = run_ok(
        memshim_cmd()
            .args(["diff", "--format", "json"])
            .arg(dir.path("before"))
            .arg(dir.path("after")),
    );
    let d: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(d["schema"], "memshim.diff/1");
    let p = &d["processes"][0];
    assert_eq!(p["program"], "fixable");
    let changed: Vec<(&str, i64, u64, u64)> = p["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .filter(|s| s["functions"][0] == "leak_per_request")
        .map(|s| {
            (
                s["memory"].as_str().expect("memory"),
                s["bytes"]["delta"].as_i64().expect("delta"),
                s["count"]["before"].as_u64().expect("before"),
                s["count"]["after"].as_u64().expect("after"),
            )
        })
        .collect();
    assert_eq!(changed, [("host", -10000, 10, 0)]);
    assert!(
        p["sites"]
            .as_array()
            .expect("sites")
            .iter()
            .all(|s| s["functions"][0] != "keep_config"),
        "keep_config did not change"
    );
    assert_eq!(p["leaked_heap"]["delta"], -10000);
    let text = run_ok(
        memshim_cmd()
            .arg("diff")
            .arg(dir.path("before"))
            .arg(dir.path("after")),
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("leak_per_request"), "{text}");
    assert!(text.contains("(-9.8 KiB)"), "{text}");
}

/// Debian's Chromium, if installed (`.ci/run` installs it; under CI it must be there).
pub fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() && std::env::var_os("CI").is_some() {
        panic!("CI must have chromium for the HTML test (.ci/run installs it)");
    }
    found
}

#[test]
fn html_report_is_self_contained_and_renders_in_chromium() {
    let dir = TestDir::new("html_report_is_self_contained_and_renders_in_chromium");
    let prog = dir.compile("growing.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let page = dir.path("report.html");
    run_ok(
        memshim_cmd()
            .args(["report", "--format", "html", "-o"])
            .arg(&page)
            .arg(dir.traces()),
    );
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(html.contains("<script id=\"memshim-data\" type=\"application/json\">{"));
    assert!(html.contains("\"schema\":\"memshim.report/2\""));
    // Nothing is fetched: no external scripts, styles or images.
    for pattern in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(pattern), "the page loads {pattern}…");
    }
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let Some(browser) = chromium() else {
        eprintln!("chromium not installed: the page was checked statically only");
        return;
    };
    let run = |args: &[&str]| {
        Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args(args)
            .arg(format!("file://{}", page.display()))
            .output()
            .expect("chromium runs")
    };
    let dom = String::from_utf8_lossy(&run(&["--virtual-time-budget=5000", "--dump-dom"]).stdout)
        .into_owned();
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the script did not finish: {}",
        &dom[..dom.len().min(500)]
    );
    assert!(!dom.contains("data-error="), "a script error: {dom}");
    assert!(dom.contains("<svg") && dom.contains("<path"), "no chart");
    assert!(dom.contains("host heap peak"), "the peak is not marked");
    assert!(
        dom.contains("Growing sites") && dom.contains("step_leak"),
        "no growth table"
    );
    assert!(dom.contains("class=\"flame\""), "no flame graph");
    assert!(
        dom.contains("Live heap at the peak") && dom.contains("Live heap at exit"),
        "flame graphs at the peak and at exit"
    );
    assert!(
        dom.contains("Counters") && dom.contains("NUMA: ") && dom.contains("page_faults_minor"),
        "counters and NUMA sections"
    );
    let shot = dir.path("report.png");
    run(&[
        "--window-size=1200,1600",
        &format!("--screenshot={}", shot.display()),
    ]);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "screenshot of {size} bytes");
}

#[test]
fn pid_and_min_bytes_filters() {
    let dir = TestDir::new("pid_and_min_bytes_filters");
    let prog = dir.compile("fork.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let all: Value =
        crate::report::parse(report(&dir, &["--format", "json"], &dir.root).as_bytes());
    let procs = all["processes"].as_array().expect("processes");
    assert_eq!(procs.len(), 2);
    let child = procs
        .iter()
        .find(|p| p["forked"] == true)
        .expect("the child");
    let pid = child["pid"].to_string();
    let one: Value = crate::report::parse(
        report(&dir, &["--format", "json", "--pid", &pid], &dir.root).as_bytes(),
    );
    let kept = one["processes"].as_array().expect("processes");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["pid"], child["pid"]);
    let big: Value = crate::report::parse(
        report(&dir, &["--format", "json", "--min-bytes", "200"], &dir.root).as_bytes(),
    );
    for p in big["processes"].as_array().expect("processes") {
        for s in p["leaks"]["host"]["sites"].as_array().expect("sites") {
            assert!(s["bytes"].as_u64().expect("bytes") >= 200, "{s}");
        }
    }
    // The child's 222 B site stays, the parent's 111 B one goes; totals are unchanged.
    let text = report(&dir, &["--min-bytes", "200"], &dir.root);
    assert!(
        text.contains("child_leak") && !text.contains("parent_leak"),
        "{text}"
    );
    assert!(
        text.contains("fork child"),
        "the overview table names the child: {text}"
    );
}

#[test]
fn since_and_until_keep_the_events_of_a_time_window() {
    let dir = TestDir::new("since_until");
    let prog = dir.compile("phases.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let phases = ["phase_one", "phase_two", "phase_three"];
    let leaks = |extra: &[&str]| {
        let mut args = vec!["--format", "json"];
        args.extend_from_slice(extra);
        let r: Value = crate::report::parse(report(&dir, &args, &dir.root).as_bytes());
        let p = crate::report::process_by_exe(&r, "phases");
        (
            crate::report::user_summary(p, "host", &phases),
            p["notes"].to_string(),
        )
    };
    let (all, _) = leaks(&[]);
    assert_eq!(
        all,
        expected(&[("phase_three", 300000, 1), ("phase_two", 200000, 1)])
    );
    let (early, notes) = leaks(&["--until", "0.15"]);
    assert_eq!(early, expected(&[("phase_one", 100000, 1)]));
    assert!(notes.contains("from the start to 0.15 s"), "{notes}");
    let (late, _) = leaks(&["--since", "0.45"]);
    assert_eq!(late, expected(&[("phase_three", 300000, 1)]));
    // An empty or impossible window is refused with a message, not an empty report.
    let bad = memshim(&[
        "report",
        "--since",
        "2",
        "--until",
        "1",
        dir.traces().to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        bad.stderr_str().contains("--since 2 is after --until 1"),
        "{}",
        bad.describe()
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let dir = TestDir::new("colour");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let plain = report(&dir, &[], &dir.root);
    assert!(!plain.contains('\x1b'), "no colour into a pipe");
    let always = report(&dir, &["--color", "always"], &dir.root);
    assert!(always.contains("\x1b[1m== "), "{always}");
    let stripped = always
        .replace("\x1b[1;31m", "")
        .replace("\x1b[1m", "")
        .replace("\x1b[33m", "")
        .replace("\x1b[36m", "")
        .replace("\x1b[0m", "");
    assert_eq!(stripped, plain, "colour changes nothing else");
}

#[test]
fn collapsed_stacks_at_the_heap_peak_differ_from_those_at_exit() {
    let dir = TestDir::new("collapsed_peak");
    let prog = dir.compile("peak.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let export = |by: &str| -> String {
        let out = run_ok(
            memshim_cmd()
                .args(["export", "--collapsed", "--by", by])
                .arg(dir.traces()),
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let peak = export("peak");
    assert!(peak.contains(";main;build_cache 1000000\n"), "{peak}");
    assert!(!peak.contains("keep_small"), "{peak}");
    let leaked = export("leaked");
    assert!(leaked.contains(";main;keep_small 10000\n"), "{leaked}");
    assert!(!leaked.contains("build_cache"), "{leaked}");
    let json: Value =
        crate::report::parse(report(&dir, &["--format", "json"], &dir.root).as_bytes());
    let at_peak = json["processes"][0]["heap"]["peak_sites"]
        .as_array()
        .expect("peak sites");
    assert!(at_peak
        .iter()
        .any(|s| s["bytes"] == 1000000 && crate::report::functions(s).contains(&"build_cache")));
}
