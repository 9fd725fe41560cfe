//! What `diff` found changed, in words: a number before and after, and a changed site, shared by the
//! diff's text and Markdown forms (see `report::diff`).
use crate::report::diff::{Change, SiteChange};
use crate::units::human_bytes;

/// Function names shown per changed site.
const FUNCTIONS_SHOWN: usize = 4;

/// "1.0 KiB -> 4.0 KiB (+3.0 KiB)".
pub fn change(c: &Change) -> String {
    let sign = if c.delta > 0 {
        "+"
    } else if c.delta < 0 {
        "-"
    } else {
        "±"
    };
    format!(
        "{} -> {} ({sign}{})",
        human_bytes(c.before),
        human_bytes(c.after),
        human_bytes(c.delta.unsigned_abs())
    )
}

/// A site's innermost function names, innermost first: "leak <- handle <- main".
pub fn site(s: &SiteChange) -> String {
    s.functions
        .iter()
        .take(FUNCTIONS_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(" <- ")
}

/// A diff of one process whose leak at `leak_per_request` a fix removed, for the renderers' tests.
#[cfg(test)]
pub fn fixture() -> crate::report::diff::Diff {
    use crate::report::diff::{Diff, ProcessDiff, TransferChange};
    let change = |before: u64, after: u64| Change {
        before,
        after,
        delta: after as i64 - before as i64,
    };
    Diff {
        schema: "memshim.diff/1",
        processes: vec![ProcessDiff {
            program: "fixable".into(),
            pid_before: 10,
            pid_after: 20,
            peak_heap: change(20_480, 10_480),
            leaked_heap: change(10_100, 100),
            peak_device: change(0, 0),
            leaked_device: change(0, 0),
            sites: vec![SiteChange {
                memory: "host",
                functions: ["leak_per_request", "handle|it", "serve", "main", "_start"]
                    .map(String::from)
                    .to_vec(),
                bytes: change(10_000, 0),
                count: change(10, 0),
            }],
            transfers: vec![TransferChange {
                kind: "HtoD pinned".into(),
                bytes: change(4096, 8192),
                count: change(1, 2),
            }],
        }],
        only_before: vec!["helper".into()],
        only_after: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::render::{markdown::Markdown, text::Text, Render};

    fn drawn(r: &dyn Render<crate::report::diff::Diff>) -> String {
        let mut out = Vec::new();
        r.render(&super::fixture(), &mut out).expect("rendered");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn the_text_diff_gives_each_change_with_its_sign() {
        assert_eq!(
            drawn(&Text { top: 10 }),
            "== fixable (pid 10 -> 20)\n\
             peak heap:     20.0 KiB -> 10.2 KiB (-9.8 KiB)\n\
             leaked heap:   9.9 KiB -> 100 B (-9.8 KiB)\n  \
             host 9.8 KiB -> 0 B (-9.8 KiB) in 10 -> 0 blocks  leak_per_request <- handle|it <- serve <- main\n  \
             transfers HtoD pinned: 4.0 KiB -> 8.0 KiB (+4.0 KiB)\n\
             only in the first run: helper\n"
        );
    }

    #[test]
    fn the_markdown_diff_keeps_each_cell_one_cell() {
        assert_eq!(
            drawn(&Markdown::new(10)),
            "# memshim diff\n\n\
             ## `fixable` (pid 10 -> 20)\n\n\
             | | before -> after |\n|---|---|\n\
             | peak heap | 20.0 KiB -> 10.2 KiB (-9.8 KiB) |\n\
             | leaked heap | 9.9 KiB -> 100 B (-9.8 KiB) |\n\n\
             | memory | leaked | blocks | site |\n|---|---|---|---|\n\
             | host | 9.8 KiB -> 0 B (-9.8 KiB) | 10 -> 0 | `leak_per_request <- handle\\|it <- serve <- main` |\n\n\
             - only in the first run: `helper`\n"
        );
    }
}
