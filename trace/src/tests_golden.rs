//! Golden traces: one committed file per format version (`golden/v<N>.mshim`), written once by that
//! version's writer and never again, which the reader must keep reading into the same events
//! (`golden/v<N>.txt`, their `Debug` form, one per line). A later version that adds a field to a
//! record changes the text only by that field's default: regenerate the text, never the trace
//! (`cargo test --release -p memshim-trace -- --ignored rewrite_the_golden_texts`, then read the
//! diff: it must show only new fields at their defaults).
//!
//! Versions 1 to 7 were written later, each by the trace crate of the last commit of `main` whose
//! `FORMAT_VERSION` was that version, so each holds its version's final set of record kinds:
//!
//! | version | writer's commit | what came next                               |
//! |---------|-----------------|----------------------------------------------|
//! | 1       | 64426b3         | 1f2071c, format 2                            |
//! | 2       | bacd7d8         | 0c850ac, format 3                            |
//! | 3       | 7f72810         | 3445cbd, format 4                            |
//! | 4       | 4bae337         | 8debbaa, format 5                            |
//! | 5       | 47cb8ac         | 1dcf131, format 6                            |
//! | 6       | 77a37cd         | 321354e, format 7 (the end names the signal) |
//! | 7       | 8524dd0         | 9d6f6c8, the merge that brought format 8     |
//!
//! Each holds, compressed and in frames of six events, every record kind of its version twice
//! (the end once, for the newest reason its version had), with distinct values in every field so
//! that a field read at the wrong offset shows; every variant of every other enum in its records;
//! and frees of blocks allocated in earlier frames (stored by distance since version 5). That
//! version's own reader read back exactly what these texts say. Versions 8 to 12 were written by
//! the writer that introduced each, from `tests::events_n`; version 1's layout is also checked by a
//! hand-built stream in `tests`.
use crate::tests::{events_n, write_events};
use crate::*;

/// The header and every event of a trace, one per line, with how the trace ended.
fn dump(bytes: &[u8]) -> String {
    let mut r = TraceReader::new(bytes).expect("the golden trace's header");
    let mut out = format!("version {}\n{:?}\n", r.version(), r.header());
    while let Some(ev) = r.next_event().expect("a golden trace reads whole") {
        out.push_str(&format!("{ev:?}\n"));
    }
    out.push_str(&format!(
        "truncated {}, frames {}\n",
        r.truncated(),
        r.frames()
    ));
    out
}

/// Checks that `bytes` is a version `version` trace that reads into `text`.
fn is_still_read(version: u32, bytes: &[u8], text: &str) {
    assert_eq!(
        bytes[8..12],
        version.to_le_bytes(),
        "golden/v{version}.mshim is a version {version} trace"
    );
    let read = dump(bytes);
    if read != text {
        let line = read
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map_or(read.lines().count().min(text.lines().count()), |i| i);
        panic!(
            "the version {version} golden trace reads differently from golden/v{version}.txt, \
             first at line {}:\n  read: {}\n  text: {}",
            line + 1,
            read.lines().nth(line).unwrap_or("(the end)"),
            text.lines().nth(line).unwrap_or("(the end)"),
        );
    }
}

macro_rules! golden {
    ($($name:ident: $version:literal,)*) => {
        $(
            #[test]
            fn $name() {
                is_still_read(
                    $version,
                    include_bytes!(concat!("../golden/v", $version, ".mshim")),
                    include_str!(concat!("../golden/v", $version, ".txt")),
                );
            }
        )*

        /// Every version that has a golden trace.
        const GOLDEN_VERSIONS: &[u32] = &[$($version),*];
    };
}

golden! {
    the_version_1_golden_trace_is_still_read: 1,
    the_version_2_golden_trace_is_still_read: 2,
    the_version_3_golden_trace_is_still_read: 3,
    the_version_4_golden_trace_is_still_read: 4,
    the_version_5_golden_trace_is_still_read: 5,
    the_version_6_golden_trace_is_still_read: 6,
    the_version_7_golden_trace_is_still_read: 7,
    the_version_8_golden_trace_is_still_read: 8,
    the_version_9_golden_trace_is_still_read: 9,
    the_version_10_golden_trace_is_still_read: 10,
    the_version_11_golden_trace_is_still_read: 11,
    the_version_12_golden_trace_is_still_read: 12,
}

#[test]
fn every_version_the_reader_reads_has_a_golden_trace() {
    assert_eq!(
        GOLDEN_VERSIONS,
        (1..=FORMAT_VERSION).collect::<Vec<_>>(),
        "a new format version needs its golden trace (see write_the_golden_trace_of_this_version)"
    );
}

/// Rewrites every `golden/v<N>.txt` from its committed trace, after a change that adds a field with
/// a default. The traces themselves are never rewritten.
#[test]
#[ignore = "rewrites trace/golden/v<N>.txt; review the diff"]
fn rewrite_the_golden_texts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden");
    for v in GOLDEN_VERSIONS {
        let bytes = std::fs::read(dir.join(format!("v{v}.mshim"))).unwrap();
        std::fs::write(dir.join(format!("v{v}.txt")), dump(&bytes)).unwrap();
    }
}

/// Writes this version's golden trace and its text, once, when a new format version is made: create
/// both files empty (the reading test includes them), add the version to `golden!`, then
/// `cargo test -p memshim-trace -- --ignored write_the_golden`.
#[test]
#[ignore = "writes trace/golden/v<FORMAT_VERSION>.*; run once for a new format version"]
fn write_the_golden_trace_of_this_version() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden");
    let trace = dir.join(format!("v{FORMAT_VERSION}.mshim"));
    assert!(
        std::fs::metadata(&trace).is_ok_and(|m| m.len() == 0),
        "{} must exist and be empty: a golden trace is written once, never rewritten",
        trace.display()
    );
    // Compressed, in frames of 7 events, with every record kind the test events hold.
    let bytes = write_events(&events_n(24), Some(3), 7);
    std::fs::write(&trace, &bytes).unwrap();
    std::fs::write(dir.join(format!("v{FORMAT_VERSION}.txt")), dump(&bytes)).unwrap();
    assert_eq!(std::fs::read(&trace).unwrap(), bytes);
}
