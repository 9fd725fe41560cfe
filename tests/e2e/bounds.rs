//! Crafted traces that repeat one small record millions of times (a few kilobytes compressed): the
//! report keeps a bounded number and says how many it left out, so memory stays bounded whatever
//! the file says (the old reader took gigabytes on such a trace).
use memshim_trace::{CudaApi, CudaFailure, End, EndReason, Event, Note, Record, TraceWriter};

use crate::hostile::{header, json_report, notes};
use crate::util::*;

/// A trace of `record` written `n` times in frames of 100000, then its end.
fn repeated(dir: &TestDir, name: &str, record: Record, n: u64) -> std::path::PathBuf {
    let path = dir.path(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = TraceWriter::new(file, &header(42, "/bin/prog", &["prog"]), Some(3)).unwrap();
    for i in 0..n {
        w.push(&Event {
            t: 1_000_000 + i,
            tid: 7,
            record: record.clone(),
        })
        .unwrap();
        if i % 100_000 == 99_999 {
            w.flush_frame().unwrap();
        }
    }
    w.push(&Event {
        t: 2_000_000_000,
        tid: 0,
        record: Record::End(End {
            reason: EndReason::Exit,
            dropped_events: 0,
        }),
    })
    .unwrap();
    w.finish().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 1 << 20, "{name}: {size} bytes");
    path
}

#[test]
fn a_million_notes_keep_the_first_256_and_say_how_many_were_left_out() {
    let dir = TestDir::new("bounds_notes");
    let note = Record::Note(Note { text: "x".into() });
    let trace = repeated(&dir, "notes.42.mshim", note, 1_000_000);
    let p = json_report(&trace)["processes"][0].clone();
    let all = notes(&p);
    assert_eq!(all.iter().filter(|n| *n == "x").count(), 256);
    assert!(
        all.contains(
            &"999744 more notes from the shim were left out (only the first 256 are kept)"
                .to_string()
        ),
        "{:?}",
        &all[256..]
    );
}

#[test]
fn a_million_failed_cuda_calls_keep_the_first_thousand_and_say_how_many_were_left_out() {
    let dir = TestDir::new("bounds_cuda_failures");
    let failure = Record::CudaFailure(CudaFailure {
        api: CudaApi::MemAlloc,
        size: 1 << 20,
        result: 2,
        device: 0,
        stack: 0,
    });
    let trace = repeated(&dir, "failures.42.mshim", failure, 1_000_000);
    let p = json_report(&trace)["processes"][0].clone();
    assert_eq!(p["device"]["failures"].as_array().map(Vec::len), Some(1000));
    assert!(
        notes(&p).contains(
            &"999000 more failed CUDA calls were left out (only the first 1000 are kept)"
                .to_string()
        ),
        "{:?}",
        notes(&p)
    );
}
