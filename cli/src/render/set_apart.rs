//! The memory a leak class sets apart from the program's own: what system code keeps by design and
//! what the user's suppressions matched (see `report::figures`), one line each, shared by the text
//! and Markdown reports.
use crate::report::model::LeakClass;
use crate::units::{blocks, human_bytes};

/// One line per by-design owner, largest first: "4.0 KiB in 1 block allocated once by design by the
/// C library: 1 site, the largest in _IO_file_doallocate".
pub fn by_design_lines(c: &LeakClass, unit: &str) -> Vec<String> {
    c.by_design_owners
        .iter()
        .map(|o| {
            let at = o
                .largest_in
                .as_ref()
                .map(|f| format!(", the largest in {f}"))
                .unwrap_or_default();
            format!(
                "{} in {} allocated once by design by {}: {}{at}",
                human_bytes(o.bytes),
                blocks(o.count, unit),
                o.described,
                blocks(o.sites, "site"),
            )
        })
        .collect()
}

/// One line per suppression rule that matched, in the file's order of first match.
pub fn suppressed_lines(c: &LeakClass, unit: &str) -> Vec<String> {
    c.suppressed_rules
        .iter()
        .map(|r| {
            format!(
                "{} in {} suppressed by {}: {}",
                human_bytes(r.bytes),
                blocks(r.count, unit),
                r.rule,
                blocks(r.sites, "site")
            )
        })
        .collect()
}
