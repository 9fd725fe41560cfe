//! Reading `memshim report --format json`: the contract's general shape, and lookups of processes,
//! leak sites and frames for the tests' exact assertions.
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::util::memshim;

/// `memshim report --format json PATH`: must succeed; the JSON is parsed and checked against the
/// report contract's general shape (see [`check_shape`]).
pub fn report_json(path: &Path) -> Value {
    let out = memshim(&[
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("json"),
        path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("the report is not JSON ({e}): {}", out.describe()));
    checked(report)
}

/// A report's JSON, checked as [`report_json`] checks it, with its frames put back in place.
pub fn parse(json: &[u8]) -> Value {
    let report: Value = serde_json::from_slice(json).unwrap_or_else(|e| {
        panic!(
            "the report is not JSON ({e}): {}",
            String::from_utf8_lossy(json)
        )
    });
    checked(report)
}

/// `report` checked against the schema as written, then its frames put back in place and the
/// rest of its shape checked.
fn checked(report: Value) -> Value {
    check_schema(&report);
    let report = unpack(report);
    check_unpacked(&report);
    report
}

/// The report with every `frames` list (and a torch loop's `marker`), written as indexes into
/// `frame_table` (memshim.report/2), holding the frames themselves, as the HTML page's script does.
pub fn unpack(mut report: Value) -> Value {
    fn walk(v: &mut Value, table: &[Value]) {
        match v {
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, table)),
            Value::Object(map) => {
                for (k, val) in map.iter_mut() {
                    let indexes = val.as_array().is_some_and(|a| a.iter().all(Value::is_u64));
                    if (k == "frames" || k == "marker") && indexes {
                        for f in val.as_array_mut().into_iter().flatten() {
                            let i = f.as_u64().unwrap_or(u64::MAX) as usize;
                            *f = table
                                .get(i)
                                .cloned()
                                .unwrap_or_else(|| panic!("frame {i} is not in frame_table"));
                        }
                    } else if k != "frame_table" {
                        walk(val, table);
                    }
                }
            }
            _ => {}
        }
    }
    let table = report["frame_table"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    walk(&mut report, &table);
    report
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("`{key}` is not a non-negative integer in {v}"))
}

/// The contract's invariants for every report: schema, fields, sites sorted by bytes, totals.
pub fn check_shape(report: &Value) {
    check_schema(report);
    check_unpacked(&unpack(report.clone()));
}

fn check_schema(report: &Value) {
    let errors = crate::schema::errors(report);
    assert!(
        errors.is_empty(),
        "the report departs from docs/report.schema.json:\n{}",
        errors.join("\n")
    );
}

/// The invariants past the schema, of a report whose frames are in place.
fn check_unpacked(report: &Value) {
    assert_eq!(report["schema"], "memshim.report/2", "schema of {report}");
    for p in processes(report) {
        for key in ["pid", "ppid"] {
            u(p, key);
        }
        assert!(
            p["exe"].as_str().is_some_and(|e| e.starts_with('/')),
            "exe of {p}"
        );
        assert!(
            p["argv"].is_array() && p["trace"].is_string(),
            "argv/trace of {p}"
        );
        assert!(
            p["forked"].is_boolean() && p["truncated"].is_boolean(),
            "flags of {p}"
        );
        let end = &p["end"];
        assert!(
            end.is_null()
                || [
                    "exit",
                    "quick_exit",
                    "exec",
                    "failure",
                    "signal",
                    "detached"
                ]
                .contains(&end.as_str().unwrap_or("")),
            "end of {p}"
        );
        let heap = &p["heap"];
        for key in [
            "allocations",
            "frees",
            "allocated_bytes",
            "peak_bytes",
            "live_bytes",
            "live_count",
        ] {
            u(heap, key);
        }
        assert!(heap["peak_time_s"].is_number(), "peak_time_s of {p}");
        for kind in ["host", "mmap", "device", "managed", "pinned", "registered"] {
            let leaks = &p["leaks"][kind];
            let sites = leaks["sites"]
                .as_array()
                .unwrap_or_else(|| panic!("leaks.{kind}.sites of {p}"));
            let bytes: Vec<u64> = sites.iter().map(|s| u(s, "bytes")).collect();
            // With sampling, sites rank by what their sampled blocks stand for.
            let ranked: Vec<u64> = sites
                .iter()
                .map(|s| match &s["estimated"] {
                    Value::Null => u(s, "bytes"),
                    e => u(e, "bytes"),
                })
                .collect();
            assert!(
                ranked.windows(2).all(|w| w[0] >= w[1]),
                "leaks.{kind} sites not ranked by (estimated) bytes: {ranked:?}"
            );
            let count: u64 = sites.iter().map(|s| u(s, "count")).sum();
            assert!(
                u(leaks, "bytes") >= bytes.iter().sum::<u64>(),
                "leaks.{kind}.bytes < sum of sites in {p}"
            );
            assert!(
                u(leaks, "count") >= count,
                "leaks.{kind}.count < sum of sites in {p}"
            );
            for frame in sites
                .iter()
                .flat_map(|s| s["frames"].as_array().expect("frames").iter())
            {
                assert!(
                    frame["kind"] == "native" || frame["kind"] == "python",
                    "frame {frame}"
                );
                assert!(
                    frame["address"]
                        .as_str()
                        .is_some_and(|a| a.starts_with("0x")),
                    "frame {frame}"
                );
            }
        }
        if p["device"]["seen"] == false {
            assert_eq!(u(&p["leaks"]["device"], "bytes"), 0, "device leaks in {p}");
        }
    }
}

/// All processes of a report, in the report's order.
pub fn processes(report: &Value) -> &Vec<Value> {
    report["processes"]
        .as_array()
        .unwrap_or_else(|| panic!("no `processes` array in {report}"))
}

fn basename(p: &Value) -> &str {
    let exe = p["exe"].as_str().unwrap_or("");
    exe.rsplit('/').next().unwrap_or(exe)
}

/// The processes whose exe's file name is `name`, in report order.
pub fn processes_by_exe<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    processes(report)
        .iter()
        .filter(|p| basename(p) == name)
        .collect()
}

/// The one process whose exe's file name is `name`.
pub fn process_by_exe<'a>(report: &'a Value, name: &str) -> &'a Value {
    let found = processes_by_exe(report, name);
    assert_eq!(
        found.len(),
        1,
        "expected one process `{name}`, found {}: {}",
        found.len(),
        summary(report)
    );
    found[0]
}

/// The leak sites of `kind` ("host", "mmap", "device").
pub fn sites<'a>(p: &'a Value, kind: &str) -> &'a Vec<Value> {
    p["leaks"][kind]["sites"]
        .as_array()
        .unwrap_or_else(|| panic!("no leaks.{kind}.sites in {p}"))
}

/// A site's frames, innermost first.
pub fn frames(site: &Value) -> &Vec<Value> {
    site["frames"]
        .as_array()
        .unwrap_or_else(|| panic!("no frames in {site}"))
}

/// A site's function names, innermost first ("?" for unknown).
pub fn functions(site: &Value) -> Vec<&str> {
    frames(site)
        .iter()
        .map(|f| f["function"].as_str().unwrap_or("?"))
        .collect()
}

/// The index of the frame whose function is exactly `func`.
pub fn frame_index(site: &Value, func: &str) -> Option<usize> {
    functions(site).iter().position(|f| *f == func)
}

/// (bytes, count) of a site.
pub fn bytes_count(site: &Value) -> (u64, u64) {
    (u(site, "bytes"), u(site, "count"))
}

/// The one site of `kind` whose frames contain `func`.
pub fn site_with<'a>(p: &'a Value, kind: &str, func: &str) -> &'a Value {
    let found: Vec<&Value> = sites(p, kind)
        .iter()
        .filter(|s| frame_index(s, func).is_some())
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one leaks.{kind} site with `{func}`:\n{}",
        dump(p)
    );
    found[0]
}

/// The sites of `kind` whose frames contain any of `funcs`.
pub fn user_sites<'a>(p: &'a Value, kind: &str, funcs: &[&str]) -> Vec<&'a Value> {
    sites(p, kind)
        .iter()
        .filter(|s| functions(s).iter().any(|f| funcs.contains(f)))
        .collect()
}

/// The user sites as sorted (first user function, bytes, count): compare with the exact expected set.
pub fn user_summary(p: &Value, kind: &str, funcs: &[&str]) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = user_sites(p, kind, funcs)
        .into_iter()
        .map(|s| {
            let name = functions(s)
                .into_iter()
                .find(|f| funcs.contains(f))
                .unwrap_or("?");
            let (b, c) = bytes_count(s);
            (name.to_string(), b, c)
        })
        .collect();
    v.sort();
    v
}

/// A readable dump of a process's leak sites, for assertion messages.
pub fn dump(p: &Value) -> String {
    let mut s = format!(
        "process pid={} exe={} truncated={} end={}\n",
        p["pid"], p["exe"], p["truncated"], p["end"]
    );
    for kind in ["host", "mmap"] {
        for site in p["leaks"][kind]["sites"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "  {kind} {} B x{}: {}",
                site["bytes"],
                site["count"],
                functions(site).join(" <- ")
            );
        }
    }
    s
}

/// One line per process, for assertion messages.
pub fn summary(report: &Value) -> String {
    processes(report)
        .iter()
        .map(dump)
        .collect::<Vec<_>>()
        .join("")
}

/// Frame `i` of a site, with a message that shows the whole stack when it is missing.
pub fn frame(site: &Value, i: usize) -> &Value {
    frames(site)
        .get(i)
        .unwrap_or_else(|| panic!("no frame {i} in {:?}", functions(site)))
}

/// Asserts frame `i` of `site` is `func`, defined in a file whose name ends with `file`, with a line.
pub fn assert_source_frame(site: &Value, i: usize, func: &str, file: &str) {
    let f = frame(site, i);
    assert_eq!(f["function"], func, "frame {i} of {:?}", functions(site));
    assert!(
        f["file"].as_str().is_some_and(|p| p.ends_with(file)),
        "frame {i} ({func}) should be in {file}: {f}"
    );
    assert!(
        f["line"].as_u64().is_some_and(|l| l > 0),
        "frame {i} ({func}) should have a line: {f}"
    );
}

/// The expected user sites, in [`user_summary`]'s order.
pub fn expected(v: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> =
        v.iter().map(|(f, b, c)| (f.to_string(), *b, *c)).collect();
    v.sort();
    v
}
