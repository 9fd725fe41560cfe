//! The HTML page as a user drives it: real clicks, key presses and mouse moves sent to headless
//! Chromium (see `cdp`), and the DOM read back, against the bytes leaky.c leaks at each site.
use serde_json::Value;

use crate::cdp::Browser;
use crate::formats::chromium;
use crate::report::report_json;
use crate::util::*;

/// What leaky.c's own functions leave live at exit (see its header comment): bytes and blocks.
const LEAK_ALIGNED: (u64, u64) = (4096 + 512 + 100 + 64, 4);
const LEAK_MALLOC: (u64, u64) = (300, 3);
const LEAK_CALLOC: (u64, u64) = (100, 4);
const LEAK_STRDUP: (u64, u64) = (12, 1);

/// The frame named `name` in the drawn flame graph.
fn frame(name: &str) -> String {
    format!(".flamegraph .flame > div[data-name=\"{name}\"]")
}

/// A drawn frame's bytes, blocks and width in CSS pixels, or `None` when it is not drawn.
fn drawn(b: &mut Browser, name: &str) -> Option<(u64, u64, f64)> {
    let sel = serde_json::to_string(&frame(name)).expect("a selector");
    let v = b.eval(&format!(
        "(() => {{ const d = document.querySelector({sel}); return d && \
         [Number(d.dataset.bytes), Number(d.dataset.blocks), d.getBoundingClientRect().width]; }})()"
    ));
    Some((v[0].as_u64()?, v[1].as_u64()?, v[2].as_f64()?))
}

fn text(b: &mut Browser, selector: &str) -> String {
    let sel = serde_json::to_string(selector).expect("a selector");
    b.eval(&format!("document.querySelector({sel}).textContent"))
        .as_str()
        .unwrap_or_else(|| panic!("nothing matches {selector}"))
        .to_string()
}

fn bytes_of(tree: &Value) -> u64 {
    tree["bytes"].as_u64().expect("a tree's bytes")
}

#[test]
fn the_pages_flame_graph_zooms_and_searches_in_chromium() {
    let dir = TestDir::new("the_pages_flame_graph_zooms_and_searches_in_chromium");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let report = report_json(&dir.traces());
    let flame = &report["processes"][0]["flame"];
    let page = dir.path("report.html");
    run_ok(
        memshim_cmd()
            .args(["report", "--format", "html", "-o"])
            .arg(&page)
            .arg(dir.traces()),
    );
    let Some(program) = chromium() else {
        eprintln!("chromium not installed: the flame graph was not driven");
        return;
    };
    let mut b = Browser::launch(program, &dir.path("profile"), 1200, 900);
    b.open(
        &format!("file://{}", page.display()),
        "document.body.dataset.rendered === 'ok'",
    );
    assert_eq!(
        b.eval("document.body.dataset.error || ''"),
        "",
        "a script error"
    );
    let width = b
        .eval("document.querySelector('.flamegraph .flame').clientWidth")
        .as_f64()
        .expect("the flame graph's width");

    // At first the graph weighs what was live at the peak: the root holds the heap's peak.
    let peak = bytes_of(&flame["peak"]);
    assert_eq!(peak, report["processes"][0]["heap"]["peak_bytes"]);
    assert_eq!(drawn(&mut b, "all").map(|d| d.0), Some(peak));

    // A click on "Live heap at exit" weighs what was leaked: each function of leaky.c holds what
    // it leaked, the four sites of leak_aligned merged into one frame.
    b.click(".flamegraph button[data-metric=\"leaked\"]");
    let leaked = bytes_of(&flame["leaked"]);
    assert_eq!(drawn(&mut b, "all").map(|d| d.0), Some(leaked));
    for (name, (bytes, blocks)) in [
        ("leak_aligned", LEAK_ALIGNED),
        ("leak_malloc", LEAK_MALLOC),
        ("leak_calloc", LEAK_CALLOC),
        ("leak_strdup", LEAK_STRDUP),
        ("grow_buffer", (256, 1)),
    ] {
        let (b_, n, _) = drawn(&mut b, name).unwrap_or_else(|| panic!("{name} is not drawn"));
        assert_eq!((b_, n), (bytes, blocks), "{name}");
    }
    let (_, _, aligned_px) = drawn(&mut b, "leak_aligned").expect("leak_aligned");
    let expected_px = width * LEAK_ALIGNED.0 as f64 / leaked as f64;
    assert!(
        (aligned_px - expected_px).abs() < 1.5,
        "{aligned_px} px, not {expected_px}"
    );

    // The tooltip names the frame under the mouse with its bytes and blocks.
    b.hover(&frame("leak_aligned"));
    let share = 100.0 * LEAK_ALIGNED.0 as f64 / leaked as f64;
    assert_eq!(
        text(&mut b, ".flamegraph .flame-tip"),
        format!("leak_aligned\n4.7 KiB in 4 blocks: {share:.1}% of the view, {share:.1}% of all")
    );

    // A click on leak_strdup zooms into it: it fills the width, the frame it called is under it,
    // the rest is gone, and the crumbs show the way back.
    b.click(&frame("leak_strdup"));
    let (bytes, _, px) = drawn(&mut b, "leak_strdup").expect("leak_strdup after the zoom");
    assert_eq!(bytes, LEAK_STRDUP.0);
    assert!((px - width).abs() < 1.5, "{px} px of {width}");
    assert_eq!(drawn(&mut b, "leak_aligned"), None, "zoomed out of view");
    let under = b.eval(
        "[...document.querySelectorAll('.flamegraph .flame > div')].map(d => d.dataset.bytes)",
    );
    assert_eq!(under.as_array().map(Vec::len), Some(2), "{under}");
    assert!(
        under.as_array().expect("frames").iter().all(|v| v == "12"),
        "{under}"
    );
    assert_eq!(
        text(&mut b, ".flamegraph .crumbs"),
        "all \u{203a} main \u{203a} leak_strdup"
    );

    // Typed into the search box, "leak_" marks the frames whose name holds it, in the view.
    b.click(".flamegraph .flame-search");
    b.type_text("leak_");
    assert_eq!(
        b.eval("document.querySelector('.flamegraph .flame-search').value"),
        "leak_"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.flamegraph .match').length"),
        1
    );
    assert_eq!(
        text(&mut b, ".flamegraph .flame-status"),
        "matched 12 B, 100.0% of the view, in 1 frame"
    );

    // Back to the whole graph by its crumb: the search stays, over all four leaking functions.
    b.click(".flamegraph .crumbs .crumb");
    assert_eq!(
        b.eval("document.querySelectorAll('.flamegraph .match').length"),
        4
    );
    let matched = LEAK_ALIGNED.0 + LEAK_MALLOC.0 + LEAK_CALLOC.0 + LEAK_STRDUP.0;
    assert_eq!(matched, 5184);
    assert_eq!(
        text(&mut b, ".flamegraph .flame-status"),
        format!(
            "matched 5.1 KiB, {:.1}% of the view, in 4 frames",
            100.0 * matched as f64 / leaked as f64
        )
    );
    let marked = b.eval(
        "[...document.querySelectorAll('.flamegraph .match')].map(d => d.dataset.name).sort()",
    );
    assert_eq!(
        marked,
        serde_json::json!(["leak_aligned", "leak_calloc", "leak_malloc", "leak_strdup"])
    );

    // Allocated over the run, churn's 1000 blocks count too (1472500 B, freed as they went).
    b.click(".flamegraph button[data-metric=\"allocated\"]");
    assert_eq!(
        drawn(&mut b, "churn").map(|d| (d.0, d.1)),
        Some((1_472_500, 1000))
    );
    assert_eq!(
        drawn(&mut b, "all").map(|d| d.0),
        Some(bytes_of(&flame["allocated"]))
    );
}

#[test]
fn a_page_that_cuts_a_list_says_how_much_it_shows() {
    let dir = TestDir::new("a_page_that_cuts_a_list_says_how_much_it_shows");
    let prog = dir.compile("many_sites.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let report = report_json(&dir.traces());
    let p = &report["processes"][0];
    let sites = p["leaks"]["host"]["sites"].as_array().expect("sites");
    let ours = sites
        .iter()
        .filter(|s| {
            s["frames"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f["function"] == "leak_sites")
        })
        .count();
    assert_eq!(ours, 150);
    let page = dir.path("report.html");
    run_ok(
        memshim_cmd()
            .args(["report", "--format", "html", "-o"])
            .arg(&page)
            .arg(dir.traces()),
    );
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let Some(program) = chromium() else {
        eprintln!("chromium not installed: the page was not opened");
        return;
    };
    let mut b = Browser::launch(program, &dir.path("profile"), 1200, 900);
    b.open(
        &format!("file://{}", page.display()),
        "document.body.dataset.rendered === 'ok'",
    );
    assert_eq!(
        b.eval("document.body.dataset.error || ''"),
        "",
        "a script error"
    );
    assert_eq!(
        text(&mut b, ".process .cut"),
        format!(
            "showing 100 of {} sites, largest first (the JSON report has them all)",
            sites.len()
        )
    );
    // The contents link to the overview and to the process, whose row in the overview links there.
    let pid = p["pid"].as_u64().expect("pid");
    let links = b.eval("[...document.querySelectorAll('#contents > ol > li > a')].map(a => a.getAttribute('href'))");
    assert!(
        links
            .as_array()
            .is_some_and(|l| l.contains(&format!("#pid-{pid}").into())),
        "{links}"
    );
    assert!(
        links
            .as_array()
            .is_some_and(|l| l.contains(&"#overview".into())),
        "{links}"
    );
    b.click(&format!("#overview a[href=\"#pid-{pid}\"]"));
    assert_eq!(b.eval("location.hash"), format!("#pid-{pid}"));
    // The flame graph merges the 150 sites into one frame.
    b.click(".flamegraph button[data-metric=\"leaked\"]");
    assert_eq!(
        b.eval("(d => d && [Number(d.dataset.bytes), Number(d.dataset.blocks)])(document.querySelector('.flamegraph .flame > div[data-name=\"leak_sites\"]'))"),
        serde_json::json!([181_200, 150])
    );
}
