//! JSON: the `memshim.report/2` contract (each distinct frame once, in `frame_table`, and every
//! `frames` list as indexes into it) and `diff`'s `memshim.diff/1`, indented with arrays of numbers
//! on one line (see `json_layout`).
use std::io::{self, Write};

use serde::Serialize;

use super::Render;
use crate::report::diff::Diff;
use crate::report::model::frame_table::{with_table, TableSoFar, WithTable};
use crate::report::model::Report;

/// The JSON renderer, of a report or of a diff.
pub struct Json;

fn write(model: &impl Serialize, out: &mut dyn Write) -> io::Result<()> {
    let mut ser =
        serde_json::Serializer::with_formatter(&mut *out, super::json_layout::Layout::default());
    model.serialize(&mut ser).map_err(io::Error::other)?;
    writeln!(out)
}

impl Render<Report> for Json {
    fn render(&self, model: &Report, out: &mut dyn Write) -> io::Result<()> {
        with_table(|| {
            write(
                &WithTable {
                    model,
                    frame_table: TableSoFar,
                },
                out,
            )
        })
    }
}

impl Render<Diff> for Json {
    fn render(&self, model: &Diff, out: &mut dyn Write) -> io::Result<()> {
        write(model, out)
    }
}
