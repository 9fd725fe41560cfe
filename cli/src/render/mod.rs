//! Renderers: one file per output format, all drawing from the same [`Report`]. No analysis here.
pub mod html;
pub mod json;
pub mod markdown;
pub mod text;

use std::io::{self, Write};

use crate::report::model::Report;

/// An output format.
pub trait Render {
    /// Writes `report` to `out`.
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()>;
}

/// Bytes for people: `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes() {
        assert_eq!(super::human_bytes(0), "0 B");
        assert_eq!(super::human_bytes(1023), "1023 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(3 << 30), "3.0 GiB");
    }
}
