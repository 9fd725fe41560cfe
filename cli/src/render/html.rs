//! HTML: one self-contained page that opens offline (no network, no CDN): memory over time with the
//! peaks marked, sortable tables of leak, growth and transfer sites, and an interactive flame graph
//! of the heap (live at the peak, at exit, or allocated; zoom and search) drawn from the report's
//! merged trees. The page is `report.html` with the report's JSON embedded; its script draws everything.
use std::collections::HashMap;
use std::io::{self, Write};

use super::Render;
use crate::report::model::frame_table::{with_table, TableSoFar, WithTable};
use crate::report::model::Report;

/// The page, with `/*MEMSHIM_DATA*/` where the report's JSON goes and `/*MEMSHIM_FLAME_GRAPH*/`
/// where the flame graph's script goes.
const PAGE: &str = include_str!("report.html");
/// The interactive flame graph (`flameGraph(process)`), put at the head of the page's script (the
/// page has exactly two script elements: its data and its code).
const FLAME_GRAPH: &str = include_str!("flame_graph.js");

/// The HTML renderer.
pub struct Html;

/// Rows kept per table of sites and frames kept per stack: the page stays small and quick on a trace of
/// millions of allocations (the JSON report keeps everything).
const MAX_ROWS: usize = 100;
const MAX_FRAMES: usize = 32;
/// Longest function or file name kept (C++ template names run to kilobytes).
const MAX_NAME: usize = 160;

/// A frame of a `frames` list: inline, or its index into the report's `table`.
fn frame_at<'a>(f: &'a serde_json::Value, table: &'a [serde_json::Value]) -> &'a serde_json::Value {
    const NONE: &serde_json::Value = &serde_json::Value::Null;
    match f.as_u64() {
        Some(i) => table.get(i as usize).unwrap_or(NONE),
        None => f,
    }
}

/// Cuts every list of sites (arrays of objects with `frames`) to [`MAX_ROWS`] and every stack to
/// [`MAX_FRAMES`], innermost frames first; frames inline keep only what the page shows (function,
/// file, line, kind), with names cut to [`MAX_NAME`] characters (frames given as indexes into
/// `table` are cut so by [`intern_frames`]).
fn trim(v: &mut serde_json::Value, table: &[serde_json::Value]) {
    use serde_json::Value;
    match v {
        Value::Array(items) => {
            if items.first().is_some_and(|i| i.get("frames").is_some()) {
                items.truncate(MAX_ROWS);
            }
            items.iter_mut().for_each(|i| trim(i, table));
        }
        Value::Object(map) => {
            // A flame graph's frame (see `report::flame`).
            if map.contains_key("parent") {
                if let Some(Value::String(name)) = map.get_mut("name") {
                    shorten(name);
                }
            }
            // A list of sites cut to MAX_ROWS says how long it was, as `<key>_total`, so that the
            // page can say "showing 100 of 549".
            let cut: Vec<(String, usize)> = map
                .iter()
                .filter_map(|(k, val)| match val {
                    Value::Array(items)
                        if items.len() > MAX_ROWS
                            && items.first().is_some_and(|i| i.get("frames").is_some()) =>
                    {
                        Some((format!("{k}_total"), items.len()))
                    }
                    _ => None,
                })
                .collect();
            for (k, n) in cut {
                map.insert(k, n.into());
            }
            for (k, val) in map.iter_mut() {
                if k == "frames" {
                    if let Value::Array(frames) = val {
                        // The frames the other reports hide (start-up, import machinery, the
                        // interpreter) stay in the JSON report only.
                        let shown = |f: &Value| frame_at(f, table).get("hidden").is_none();
                        if frames.iter().any(shown) {
                            frames.retain(shown);
                        }
                        frames.truncate(MAX_FRAMES);
                        frames
                            .iter_mut()
                            .filter(|f| f.is_object())
                            .for_each(slim_frame);
                    }
                } else {
                    trim(val, table);
                }
            }
        }
        _ => {}
    }
}

fn slim_frame(f: &mut serde_json::Value) {
    let Some(map) = f.as_object_mut() else {
        return;
    };
    // The page names a file as the text report does (`short_file`, a Python file from its package,
    // else the file's own name) and an unnamed frame by its module and offset.
    let module = map.remove("module");
    let offset = map.remove("offset");
    if map.get("function").is_none_or(|v| v.is_null()) {
        if let (Some(m), Some(o)) = (
            module.as_ref().and_then(|v| v.as_str()),
            offset.as_ref().and_then(|v| v.as_str()),
        ) {
            let m = m.rsplit('/').next().unwrap_or(m);
            map.insert("function".into(), format!("{m}+{o}").into());
        }
    }
    map.remove("address");
    map.remove("hidden");
    for key in ["function", "file", "short_file"] {
        if let Some(serde_json::Value::String(s)) = map.get_mut(key) {
            shorten(s);
        }
    }
}

/// Cuts `s` to [`MAX_NAME`] characters, the last an ellipsis.
fn shorten(s: &mut String) {
    if s.chars().count() > MAX_NAME {
        *s = format!("{}…", s.chars().take(MAX_NAME - 1).collect::<String>());
    }
}

/// Replaces every frame by its index in one table of distinct frames as the page shows them
/// (slimmed), added as `frame_table`: sites share most of their frames, so the page carries each
/// once (the page's script puts them back). Frames already given as indexes into the report's
/// `table` are slimmed once per index; two that slim to the same frame become one.
fn intern_frames(v: &mut serde_json::Value, table: Vec<serde_json::Value>) {
    use serde_json::Value;
    struct Interner {
        report_table: Vec<Value>,
        /// The page's index of each report index seen so far.
        remap: Vec<Option<usize>>,
        table: Vec<Value>,
        index: HashMap<String, usize>,
    }
    impl Interner {
        fn intern(&mut self, f: Value) -> usize {
            let key = f.to_string();
            let table = &mut self.table;
            *self.index.entry(key).or_insert_with(|| {
                table.push(f);
                table.len() - 1
            })
        }
        fn frame(&mut self, f: &mut Value) -> usize {
            let Some(i) = f.as_u64().map(|i| i as usize) else {
                return self.intern(f.take());
            };
            if let Some(Some(page)) = self.remap.get(i) {
                return *page;
            }
            let mut slim = self.report_table.get(i).cloned().unwrap_or_default();
            slim_frame(&mut slim);
            let page = self.intern(slim);
            if i < self.remap.len() {
                self.remap[i] = Some(page);
            }
            page
        }
        fn walk(&mut self, v: &mut Value) {
            match v {
                Value::Array(items) => items.iter_mut().for_each(|i| self.walk(i)),
                Value::Object(map) => {
                    for (k, val) in map.iter_mut() {
                        match val {
                            Value::Array(frames) if k == "frames" => {
                                for f in frames.iter_mut() {
                                    *f = Value::from(self.frame(f));
                                }
                            }
                            _ => self.walk(val),
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut interner = Interner {
        remap: vec![None; table.len()],
        report_table: table,
        table: Vec::new(),
        index: HashMap::new(),
    };
    interner.walk(v);
    if let Value::Object(map) = v {
        map.insert("frame_table".into(), Value::Array(interner.table));
    }
}

impl Render for Html {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        // Frames as indexes into the report's table of distinct frames: inline, a PyTorch job's
        // thousands of sites made millions of frame objects, most of them cut again by `trim`.
        let mut value = with_table(|| {
            serde_json::to_value(WithTable {
                model: report,
                frame_table: TableSoFar,
            })
        })
        .map_err(io::Error::other)?;
        let table = match value.as_object_mut().and_then(|m| m.remove("frame_table")) {
            Some(serde_json::Value::Array(table)) => table,
            _ => Vec::new(),
        };
        trim(&mut value, &table);
        intern_frames(&mut value, table);
        let json = serde_json::to_string(&value).map_err(io::Error::other)?;
        // Inside <script>, "</" could end the element and "<!--" open a comment: no '<', '>' or
        // '&' reaches the page as itself. JSON has them only inside strings, where the \u escapes
        // stand for the same characters, so the data parses back unchanged.
        let json = json
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026");
        let (before, after) = PAGE
            .split_once("/*MEMSHIM_DATA*/")
            .ok_or_else(|| io::Error::other("the HTML template has no data placeholder"))?;
        let (between, after) = after
            .split_once("/*MEMSHIM_FLAME_GRAPH*/")
            .ok_or_else(|| io::Error::other("the HTML template has no flame graph placeholder"))?;
        for part in [before, &json, between, FLAME_GRAPH, after] {
            out.write_all(part.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_leaves_hidden_frames_out_and_names_unnamed_ones_by_offset() {
        let mut v = serde_json::json!({"sites": [{"bytes": 1, "frames": [
            {"function": null, "module": "/app/libx.so", "offset": "0x2f10", "address": "0x7f0000002f10"},
            {"function": "run", "file": "/venv/lib/python3.12/site-packages/pkg/run.py",
             "short_file": "pkg/run.py", "kind": "python", "line": 3},
            {"function": "_start", "hidden": "startup", "address": "0x1"}
        ]}]});
        trim(&mut v, &[]);
        let frames = v["sites"][0]["frames"].as_array().unwrap();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0], serde_json::json!({"function": "libx.so+0x2f10"}));
        assert_eq!(frames[1]["short_file"], "pkg/run.py");
        assert!(frames[1]["file"].as_str().unwrap().starts_with("/venv/"));
    }

    #[test]
    fn long_site_lists_and_deep_stacks_are_cut_for_the_page() {
        let frame = serde_json::json!({"function": "f".repeat(500), "address": "0x1", "module": "/lib/x.so", "line": 3});
        let site = serde_json::json!({"bytes": 1, "frames": vec![frame; 300]});
        let mut v = serde_json::json!({"processes": [{"leaks": {"host": {"sites": vec![site; 1000]}},
            "timeline": {"host_live": vec![[0.0, 1.0]; 3000]}}]});
        trim(&mut v, &[]);
        let sites = v["processes"][0]["leaks"]["host"]["sites"]
            .as_array()
            .unwrap();
        assert_eq!(sites.len(), MAX_ROWS);
        assert_eq!(v["processes"][0]["leaks"]["host"]["sites_total"], 1000);
        assert_eq!(sites[0]["frames"].as_array().unwrap().len(), MAX_FRAMES);
        let f = &sites[0]["frames"][0];
        assert_eq!(f["function"].as_str().unwrap().chars().count(), MAX_NAME);
        assert!(f.get("address").is_none() && f.get("module").is_none());
        assert_eq!(f["line"], 3);
        let series = v["processes"][0]["timeline"]["host_live"]
            .as_array()
            .unwrap();
        assert_eq!(series.len(), 3000, "only site lists are cut");
    }

    #[test]
    fn frames_given_as_indexes_are_cut_and_slimmed_once_each() {
        let table = vec![
            serde_json::json!({"function": "main", "address": "0x10", "module": "/bin/x", "line": 5}),
            serde_json::json!({"function": "_start", "hidden": "startup", "address": "0x1"}),
            // The same frame as the first at another address: one frame on the page.
            serde_json::json!({"function": "main", "address": "0x20", "module": "/bin/x", "line": 5}),
            serde_json::json!({"function": "g".repeat(300), "address": "0x30"}),
        ];
        let mut v = serde_json::json!({"sites": [
            {"bytes": 2, "frames": [3, 0, 1]},
            {"bytes": 1, "frames": [2, 1]},
            {"bytes": 1, "frames": [1]}
        ]});
        trim(&mut v, &table);
        intern_frames(&mut v, table);
        assert_eq!(v["sites"][0]["frames"], serde_json::json!([0, 1]));
        assert_eq!(v["sites"][1]["frames"], serde_json::json!([1]));
        // Every frame hidden: all are kept, as the other reports do.
        assert_eq!(v["sites"][2]["frames"], serde_json::json!([2]));
        let page = v["frame_table"].as_array().unwrap();
        assert_eq!(page.len(), 3);
        assert_eq!(
            page[0]["function"].as_str().unwrap().chars().count(),
            MAX_NAME
        );
        assert_eq!(page[1], serde_json::json!({"function": "main", "line": 5}));
        assert_eq!(page[2], serde_json::json!({"function": "_start"}));
    }

    #[test]
    fn flame_graph_names_are_cut_like_frame_names() {
        let long = "t".repeat(400);
        let mut v = serde_json::json!({"processes": [{"flame": {"peak": {"bytes": 5, "nodes": [
            {"name": long, "kind": "native", "bytes": 5, "blocks": 1, "parent": null},
            {"name": "leaf", "kind": "native", "bytes": 5, "blocks": 1, "parent": 0}]}}}]});
        trim(&mut v, &[]);
        let nodes = &v["processes"][0]["flame"]["peak"]["nodes"];
        let top = &nodes[0];
        assert_eq!(top["name"].as_str().unwrap().chars().count(), MAX_NAME);
        assert!(top["name"].as_str().unwrap().ends_with('…'));
        assert_eq!(nodes[1]["name"], "leaf");
        assert_eq!(top["bytes"], 5);
    }
}
