//! JSON: the `memshim.report/1` contract (and `diff`'s `memshim.diff/1`), pretty-printed.
use std::io::{self, Write};

use serde::Serialize;

use super::Render;

/// The JSON renderer, of a report or of a diff.
pub struct Json;

impl<M: Serialize> Render<M> for Json {
    fn render(&self, model: &M, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, model).map_err(io::Error::other)?;
        writeln!(out)
    }
}
