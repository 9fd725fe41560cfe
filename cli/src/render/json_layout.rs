//! How the JSON renderer lays its text out: indented like `serde_json`'s pretty printer, except that
//! an array of numbers stays on one line. A report's `frames` lists are indexes into the frame
//! table, 50 to a stack in a PyTorch job: one a line, they made 28 MB of a 38 MB report's
//! whitespace.
use std::io::{self, Write};

use serde_json::ser::Formatter;

const INDENT: &[u8] = b"  ";

/// An open array: whether its values go on one line (decided by the first: a number), and
/// whether it has any.
#[derive(Clone, Copy)]
struct Array {
    inline: Option<bool>,
    first: bool,
}

/// The layout (a `serde_json` formatter).
#[derive(Default)]
pub struct Layout {
    depth: usize,
    /// The arrays open, innermost last (`None` for an open object).
    open: Vec<Option<Array>>,
    /// A value of the innermost array is about to be written.
    pending: bool,
    /// The innermost object has keys.
    has_key: Vec<bool>,
}

impl Layout {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(INDENT)?;
        }
        Ok(())
    }

    /// Writes what comes before a value: in an array, its separator.
    fn value<W: ?Sized + Write>(&mut self, w: &mut W, number: bool) -> io::Result<()> {
        if !self.pending {
            return Ok(());
        }
        self.pending = false;
        let Some(Some(a)) = self.open.last_mut() else {
            return Ok(());
        };
        let inline = *a.inline.get_or_insert(number);
        let first = std::mem::replace(&mut a.first, false);
        match (inline, first) {
            (true, true) => Ok(()),
            (true, false) => w.write_all(b", "),
            (false, true) => self.newline(w),
            (false, false) => {
                w.write_all(b",")?;
                self.newline(w)
            }
        }
    }
}

macro_rules! numbers {
    ($($name:ident: $t:ty,)*) => {
        $(
            fn $name<W: ?Sized + Write>(&mut self, w: &mut W, v: $t) -> io::Result<()> {
                self.value(w, true)?;
                serde_json::ser::CompactFormatter.$name(w, v)
            }
        )*
    };
}

impl Formatter for Layout {
    numbers! {
        write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64, write_i128: i128,
        write_u8: u8, write_u16: u16, write_u32: u32, write_u64: u64, write_u128: u128,
        write_f32: f32, write_f64: f64,
    }

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, true)?;
        w.write_all(b"null")
    }

    fn write_bool<W: ?Sized + Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.value(w, true)?;
        w.write_all(if v { b"true" } else { b"false" })
    }

    fn write_number_str<W: ?Sized + Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.value(w, true)?;
        w.write_all(v.as_bytes())
    }

    fn write_raw_fragment<W: ?Sized + Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.value(w, false)?;
        w.write_all(v.as_bytes())
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, false)?;
        w.write_all(b"\"")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, false)?;
        self.open.push(Some(Array {
            inline: None,
            first: true,
        }));
        self.depth += 1;
        w.write_all(b"[")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, _w: &mut W, _first: bool) -> io::Result<()> {
        self.pending = true;
        Ok(())
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        let a = self.open.pop().flatten();
        if let Some(Array {
            inline: Some(false),
            first: false,
        }) = a
        {
            self.newline(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, false)?;
        self.open.push(None);
        self.has_key.push(false);
        self.depth += 1;
        w.write_all(b"{")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if let Some(k) = self.has_key.last_mut() {
            *k = true;
        }
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        self.open.pop();
        if self.has_key.pop().unwrap_or(false) {
            self.newline(w)?;
        }
        w.write_all(b"}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn laid_out(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Layout::default());
        serde::Serialize::serialize(v, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_stay_on_one_line_and_the_rest_is_indented() {
        let v = serde_json::json!({
            "frames": [3, 4, 5],
            "empty": [],
            "nothing": {},
            "names": ["a", "b"],
            "sites": [{"bytes": 1.5, "frames": [0]}],
            "flags": [true, null],
        });
        let text = laid_out(&v);
        assert_eq!(
            text,
            "{\n  \"empty\": [],\n  \"flags\": [true, null],\n  \"frames\": [3, 4, 5],\n  \
             \"names\": [\n    \"a\",\n    \"b\"\n  ],\n  \"nothing\": {},\n  \"sites\": [\n    \
             {\n      \"bytes\": 1.5,\n      \"frames\": [0]\n    }\n  ]\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
