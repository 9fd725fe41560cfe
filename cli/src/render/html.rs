//! HTML: one self-contained page that opens offline (no network, no CDN): memory over time with the
//! peaks marked, sortable tables of leak, growth and transfer sites, and flame graphs of the heap live
//! at the peak and at exit. The page is `report.html` with the report's JSON embedded; its script draws everything.
use std::io::{self, Write};

use super::Render;
use crate::report::model::Report;

/// The page, with `/*MEMSHIM_DATA*/` where the report's JSON goes.
const PAGE: &str = include_str!("report.html");

/// The HTML renderer.
pub struct Html;

/// Rows kept per table of sites and frames kept per stack: the page stays small and quick on a trace of
/// millions of allocations (the JSON report keeps everything).
const MAX_ROWS: usize = 200;
const MAX_FRAMES: usize = 48;

/// Cuts every list of sites (arrays of objects with `frames`) to [`MAX_ROWS`] and every stack to
/// [`MAX_FRAMES`], innermost frames first.
fn trim(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Array(items) => {
            if items.first().is_some_and(|i| i.get("frames").is_some()) {
                items.truncate(MAX_ROWS);
            }
            items.iter_mut().for_each(trim);
        }
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if k == "frames" {
                    if let Value::Array(frames) = val {
                        frames.truncate(MAX_FRAMES);
                    }
                } else {
                    trim(val);
                }
            }
        }
        _ => {}
    }
}

impl Render for Html {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        let mut value = serde_json::to_value(report).map_err(io::Error::other)?;
        trim(&mut value);
        let json = serde_json::to_string(&value).map_err(io::Error::other)?;
        // Inside <script>, "</" could end the element and "<!--" open a comment: escape both.
        let json = json.replace("</", "<\\/").replace("<!--", "<\\!--");
        let (before, after) = PAGE
            .split_once("/*MEMSHIM_DATA*/")
            .ok_or_else(|| io::Error::other("the HTML template has no data placeholder"))?;
        out.write_all(before.as_bytes())?;
        out.write_all(json.as_bytes())?;
        out.write_all(after.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_site_lists_and_deep_stacks_are_cut_for_the_page() {
        let site = serde_json::json!({"bytes": 1, "frames": vec![serde_json::json!({"function": "f"}); 300]});
        let mut v = serde_json::json!({"processes": [{"leaks": {"host": {"sites": vec![site; 1000]}},
            "timeline": {"host_live": vec![[0.0, 1.0]; 3000]}}]});
        trim(&mut v);
        let sites = v["processes"][0]["leaks"]["host"]["sites"]
            .as_array()
            .unwrap();
        assert_eq!(sites.len(), MAX_ROWS);
        assert_eq!(sites[0]["frames"].as_array().unwrap().len(), MAX_FRAMES);
        let series = v["processes"][0]["timeline"]["host_live"]
            .as_array()
            .unwrap();
        assert_eq!(series.len(), 3000, "only site lists are cut");
    }
}
