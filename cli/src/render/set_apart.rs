//! The memory a leak class sets apart from the program's own: what system code keeps by design and
//! what the user's suppressions matched, one line each, shared by the text and Markdown reports.
use std::collections::BTreeMap;

use crate::report::by_design::{describe, is_by_design};
use crate::report::model::LeakClass;
use crate::units::{blocks, human_bytes};

/// One line per by-design owner, largest first: "4.0 KiB in 1 block allocated once by design by the
/// C library: 1 site, the largest in _IO_file_doallocate".
pub fn by_design_lines(c: &LeakClass, unit: &str) -> Vec<String> {
    let mut owners: BTreeMap<&str, (u64, u64, usize, Option<String>)> = BTreeMap::new();
    for s in c.sites.iter().filter(|s| is_by_design(s.owner)) {
        let e = owners.entry(s.owner).or_default();
        e.0 += s.bytes;
        e.1 += s.count;
        e.2 += 1;
        // The sites are largest first: the first one names the owner's main site.
        if e.3.is_none() {
            // Its innermost frame past the allocator; when that has no name, the innermost named
            // frame of the same library, else its place.
            let mut inner = s
                .frames
                .iter()
                .filter(|f| !crate::report::model::frame::is_allocator(f));
            let first = inner.next();
            e.3 = first
                .filter(|f| f.function.is_none())
                .and_then(|f| inner.find(|g| g.module == f.module && g.function.is_some()))
                .or(first)
                .map(|f| match f.function.as_deref() {
                    Some(func) => func.strip_prefix("__GI_").unwrap_or(func).to_string(),
                    None => crate::report::model::frame::place(f),
                });
        }
    }
    let mut v: Vec<_> = owners.into_iter().collect();
    v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    v.into_iter()
        .map(|(owner, (bytes, count, sites, func))| {
            let at = func
                .map(|f| format!(", the largest in {f}"))
                .unwrap_or_default();
            format!(
                "{} in {} allocated once by design by {}: {}{at}",
                human_bytes(bytes),
                blocks(count, unit),
                describe(owner),
                blocks(sites as u64, "site"),
            )
        })
        .collect()
}

/// One line per suppression rule that matched, in the file's order of first match.
pub fn suppressed_lines(c: &LeakClass, unit: &str) -> Vec<String> {
    let mut rules: Vec<(&str, u64, u64, usize)> = Vec::new();
    for s in &c.sites {
        let Some(rule) = s.suppressed_by.as_deref() else {
            continue;
        };
        match rules.iter_mut().find(|r| r.0 == rule) {
            Some(r) => {
                r.1 += s.bytes;
                r.2 += s.count;
                r.3 += 1;
            }
            None => rules.push((rule, s.bytes, s.count, 1)),
        }
    }
    rules
        .into_iter()
        .map(|(rule, bytes, count, sites)| {
            format!(
                "{} in {} suppressed by {rule}: {}",
                human_bytes(bytes),
                blocks(count, unit),
                blocks(sites as u64, "site")
            )
        })
        .collect()
}
