//! JSON: the `memshim.report/1` contract, pretty-printed.
use std::io::{self, Write};

use super::Render;
use crate::report::model::Report;

/// The JSON renderer.
pub struct Json;

impl Render for Json {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report).map_err(io::Error::other)?;
        writeln!(out)
    }
}
