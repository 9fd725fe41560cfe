//! HTML: one self-contained page that opens offline (no network, no CDN): memory over time with the
//! peaks marked, sortable tables of leak, growth and transfer sites, and a flame graph of the heap live
//! at exit. The page is `report.html` with the report's JSON embedded; its script draws everything.
use std::io::{self, Write};

use super::Render;
use crate::report::model::Report;

/// The page, with `/*MEMSHIM_DATA*/` where the report's JSON goes.
const PAGE: &str = include_str!("report.html");

/// The HTML renderer.
pub struct Html;

impl Render for Html {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        let json = serde_json::to_string(report).map_err(io::Error::other)?;
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
