//! The JSON report's table of distinct frames. A PyTorch job's report lists thousands of sites
//! whose stacks are 150 frames deep and share nearly all of them (one CPU training run: 1.6M
//! frames, 7,583 distinct), so written inline the JSON was 707 MB. The report's JSON carries each
//! distinct frame once, in `frame_table`, and every `frames` list as indexes into it, as the HTML
//! page already did.
//!
//! The table is filled while the report is serialized: [`with_table`] turns it on for the current
//! thread, each `frames` field (serialized through [`indexes`]) adds its frames, and
//! [`TableSoFar`], serialized after the report's own fields, writes what was collected. Outside
//! [`with_table`] the frames serialize inline, as every other consumer of the model (the HTML
//! page, the tests of the model) expects. It never changes a frame.
use std::cell::RefCell;

use rustc_hash::FxHashMap as HashMap;
use serde::{Serialize, Serializer};

use super::frame::FrameOut;

#[derive(Default)]
struct Table {
    index: HashMap<FrameOut, u32>,
    frames: Vec<FrameOut>,
}

thread_local! {
    static TABLE: RefCell<Option<Table>> = const { RefCell::new(None) };
}

/// Runs `f` with the table turned on for this thread, and turns it off again.
pub fn with_table<R>(f: impl FnOnce() -> R) -> R {
    TABLE.with(|t| *t.borrow_mut() = Some(Table::default()));
    let out = f();
    TABLE.with(|t| *t.borrow_mut() = None);
    out
}

/// `serialize_with` for a `frames` field: indexes into the table while it is on, else the frames.
pub fn indexes<S: Serializer>(frames: &[FrameOut], s: S) -> Result<S::Ok, S::Error> {
    let ids: Option<Vec<u32>> = TABLE.with(|t| {
        let mut t = t.borrow_mut();
        let table = t.as_mut()?;
        Some(
            frames
                .iter()
                .map(|f| {
                    if let Some(&i) = table.index.get(f) {
                        return i;
                    }
                    let i = table.frames.len() as u32;
                    table.frames.push(f.clone());
                    table.index.insert(f.clone(), i);
                    i
                })
                .collect(),
        )
    });
    match ids {
        Some(ids) => ids.serialize(s),
        None => frames.serialize(s),
    }
}

/// The frames collected so far, in index order (empty outside [`with_table`]).
pub struct TableSoFar;

impl Serialize for TableSoFar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TABLE.with(|t| match t.borrow().as_ref() {
            Some(table) => table.frames.serialize(s),
            None => Vec::<FrameOut>::new().serialize(s),
        })
    }
}

/// A model with its frame table after its own fields (serde writes a flattened struct's fields
/// first, in order, so every `frames` field is seen before the table is written).
#[derive(Serialize)]
pub struct WithTable<'a, M: Serialize> {
    #[serde(flatten)]
    pub model: &'a M,
    pub frame_table: TableSoFar,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Two {
        #[serde(serialize_with = "indexes")]
        a: Vec<FrameOut>,
        #[serde(serialize_with = "indexes")]
        b: Vec<FrameOut>,
    }

    fn frame(name: &str) -> FrameOut {
        FrameOut {
            kind: "native",
            function: Some(name.into()),
            address: "0x10".into(),
            ..FrameOut::default()
        }
    }

    #[test]
    fn each_distinct_frame_is_written_once_and_inline_outside_the_table() {
        let m = Two {
            a: vec![frame("f"), frame("g")],
            b: vec![frame("g"), frame("h"), frame("f")],
        };
        let packed = with_table(|| {
            serde_json::to_value(WithTable {
                model: &m,
                frame_table: TableSoFar,
            })
            .unwrap()
        });
        assert_eq!(packed["a"], serde_json::json!([0, 1]));
        assert_eq!(packed["b"], serde_json::json!([1, 2, 0]));
        let names: Vec<&str> = packed["frame_table"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["function"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["f", "g", "h"]);
        let inline = serde_json::to_value(&m).unwrap();
        assert_eq!(inline["b"][1]["function"], "h");
    }
}
