//! Golden traces: one committed file per format version (`golden/v<N>.mshim`), written once by that
//! version's writer and never again, which the reader must keep reading into the same events
//! (`golden/v<N>.txt`, their `Debug` form, one per line). A later version that adds a field to a
//! record changes the text only by that field's default: regenerate the text, never the trace.
//! Versions 1 to 7 have no golden file (no build of theirs was kept to write one); version 1's
//! layout is checked by a hand-built stream in `tests`.
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

#[test]
fn the_version_8_golden_trace_is_still_read() {
    let bytes = include_bytes!("../golden/v8.mshim");
    assert_eq!(
        bytes[8..12],
        8u32.to_le_bytes(),
        "the file is a version 8 trace"
    );
    assert_eq!(dump(bytes), include_str!("../golden/v8.txt"));
}

#[test]
fn the_version_9_golden_trace_is_still_read() {
    let bytes = include_bytes!("../golden/v9.mshim");
    assert_eq!(
        bytes[8..12],
        9u32.to_le_bytes(),
        "the file is a version 9 trace"
    );
    assert_eq!(dump(bytes), include_str!("../golden/v9.txt"));
}

#[test]
fn the_version_10_golden_trace_is_still_read() {
    let bytes = include_bytes!("../golden/v10.mshim");
    assert_eq!(
        bytes[8..12],
        10u32.to_le_bytes(),
        "the file is a version 10 trace"
    );
    assert_eq!(dump(bytes), include_str!("../golden/v10.txt"));
}

#[test]
fn the_version_11_golden_trace_is_still_read() {
    let bytes = include_bytes!("../golden/v11.mshim");
    assert_eq!(
        bytes[8..12],
        11u32.to_le_bytes(),
        "the file is a version 11 trace"
    );
    assert_eq!(dump(bytes), include_str!("../golden/v11.txt"));
}

/// Writes this version's golden trace and its text, once, when a new format version is made: create
/// both files empty (the reading test includes them), then
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
