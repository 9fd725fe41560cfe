//! Frames duplicated, lost or crafted: what a damaged copy or a hostile file does to the reader.
use std::ops::Range;

use crate::frame::{FRAME_HEADER_LEN, FRAME_SEQ_LEN};
use crate::tests::{events_n, events_of_version, header, read_all, ring_events, write_events};
use crate::*;

/// The byte ranges of the frames of a version-7 trace.
fn frame_spans(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut at = TraceReader::new(bytes).unwrap().offset() as usize;
    let mut spans = Vec::new();
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 2..at + 6].try_into().unwrap()) as usize;
        let end = at + FRAME_HEADER_LEN + FRAME_SEQ_LEN + len;
        spans.push(at..end);
        at = end;
    }
    spans
}

/// Reads every event and the reader's counts of duplicate, missing frames and unresolved frees.
fn read_counting(bytes: &[u8]) -> (Vec<Event>, u64, u64, u64) {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(ev) = r.next_event().unwrap() {
        out.push(ev);
    }
    (
        out,
        r.duplicate_frames(),
        r.missing_frames(),
        r.unresolved_events(),
    )
}

#[test]
fn a_duplicated_frame_is_skipped_and_counted() {
    for level in [None, Some(3)] {
        let bytes = write_events(&events_n(300), level, 50);
        let (want, _) = read_all(&bytes).unwrap();
        let spans = frame_spans(&bytes);
        assert!(spans.len() > 4, "{} frames", spans.len());
        for k in 0..spans.len() {
            // Frame k written twice in a row, and frame k copied once more at the end.
            let mut twice = bytes[..spans[k].end].to_vec();
            twice.extend_from_slice(&bytes[spans[k].clone()]);
            twice.extend_from_slice(&bytes[spans[k].end..]);
            let mut at_end = bytes.clone();
            at_end.extend_from_slice(&bytes[spans[k].clone()]);
            for damaged in [twice, at_end] {
                let (got, dup, missing, unresolved) = read_counting(&damaged);
                assert_eq!(got, want, "frame {k} duplicated is counted once");
                assert_eq!((dup, missing, unresolved), (1, 0, 0), "frame {k}");
            }
        }
    }
}

#[test]
fn a_lost_frame_is_counted_and_frees_after_it_never_name_the_wrong_block() {
    // A ring of 8 buffers: most frees are stored by distance, some to blocks of the lost frame.
    let evs = ring_events(400, 8);
    let bytes = write_events(&evs, Some(3), 40);
    let spans = frame_spans(&bytes);
    // Every event of the whole trace with the frame it is in.
    let mut whole = TraceReader::new(&bytes[..]).unwrap();
    let mut all = Vec::new();
    while let Some(ev) = whole.next_event().unwrap() {
        all.push((whole.frames() - 1, ev));
    }
    let mut some_unresolved = false;
    for k in 0..spans.len() {
        let mut lost = bytes[..spans[k].start].to_vec();
        lost.extend_from_slice(&bytes[spans[k].end..]);
        let (got, dup, missing, unresolved) = read_counting(&lost);
        // The last frame's loss leaves no gap behind it (such a trace also lacks its end).
        let gap = u64::from(k + 1 < spans.len());
        assert_eq!((dup, missing), (0, gap), "frame {k} lost");
        // What is read is the whole trace less the lost frame and the unresolved events, in order:
        // no event is changed (a free never names another block, no address is shifted).
        let kept: Vec<&Event> = all
            .iter()
            .filter(|(f, _)| *f != k as u64)
            .map(|(_, e)| e)
            .collect();
        let mut rest = kept.iter();
        for ev in &got {
            assert!(
                rest.any(|e| *e == ev),
                "frame {k} lost: {ev:?} is not in the trace"
            );
        }
        assert_eq!(
            got.len() as u64 + unresolved,
            kept.len() as u64,
            "frame {k}"
        );
        some_unresolved |= unresolved > 0;
    }
    assert!(some_unresolved, "frees refer to blocks of lost frames");
}

#[test]
fn version_7_traces_without_frame_numbers_are_still_read() {
    // A version 7 trace: the same preamble with version 7, frames without their numbers.
    let evs = events_of_version(100, 7);
    let in_version = |version: u32| {
        let mut bytes = write_events(&[], None, 1);
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        let at = Resume {
            version,
            next_seq: 0,
            next_serial: 0,
        };
        let mut w = TraceWriter::append(&mut bytes, Some(3), at).unwrap();
        for (i, ev) in evs.iter().enumerate() {
            w.push(ev).unwrap();
            if i % 30 == 29 {
                w.flush_frame().unwrap();
            }
        }
        w.finish().unwrap();
        bytes
    };
    let bytes = in_version(7);
    let (got, dup, missing, _) = read_counting(&bytes);
    let (want, _) = read_all(&write_events(&evs, Some(3), 30)).unwrap();
    assert_eq!(got, want);
    assert_eq!((dup, missing), (0, 0));
    assert_eq!(TraceReader::new(&bytes[..]).unwrap().version(), 7);
    assert!(
        bytes.len() + 16 * 8 <= in_version(8).len(),
        "version 7 frames carry no numbers"
    );
}

#[test]
fn a_frame_claiming_more_than_the_file_holds_costs_nothing_and_is_torn() {
    let mut bytes = write_events(&[], None, 1);
    let fh = crate::frame::FrameHeader {
        flags: 1,
        stored_len: MAX_FRAME_LEN,
        raw_len: MAX_FRAME_LEN,
        crc: 0,
    };
    bytes.extend_from_slice(&fh.encode());
    bytes.extend_from_slice(&[0; FRAME_SEQ_LEN]);
    bytes.extend_from_slice(&[1, 2, 3]);
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    assert_eq!(r.next_event().unwrap(), None);
    assert!(r.truncated());
    assert_eq!(
        r.torn_bytes(),
        (FRAME_HEADER_LEN + FRAME_SEQ_LEN + 3) as u64
    );
}

#[test]
fn a_record_longer_than_a_record_may_be_is_a_corrupt_frame() {
    // One stack of 17 million zero frames: 17 MB encoded, a few KB compressed.
    let frames = vec![0u64; (MAX_RECORD_BYTES + (1 << 20)) as usize];
    let huge = Event {
        t: 1_000,
        tid: 0,
        record: Record::Stack(StackDef { id: 1, frames }),
    };
    let bytes = write_events(&[huge], Some(1), 1);
    assert!(bytes.len() < 100_000, "{} bytes", bytes.len());
    let err = read_all(&bytes).expect_err("too long");
    assert!(matches!(err, Error::CorruptFrame { .. }), "{err}");
    assert!(
        err.to_string().contains("an event does not decode"),
        "{err}"
    );
}

#[test]
fn a_compressed_frame_of_millions_of_tiny_events_is_decoded_one_at_a_time() {
    // 4 MB of four-byte events in one small frame: the reader hands them out one by one (the old
    // reader queued every decoded event of a frame at once: a 64 MiB frame took gigabytes).
    let mut w = TraceWriter::new(Vec::new(), &header(), Some(1)).unwrap();
    let tiny = Event {
        t: 0,
        tid: 0,
        record: Record::Dropped(0),
    };
    for _ in 0..1_000_000 {
        w.push(&tiny).unwrap();
    }
    let bytes = w.finish().unwrap();
    assert!(bytes.len() < 20_000, "{} bytes", bytes.len());
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    assert_eq!(r.next_event().unwrap(), Some(tiny.clone()));
    // Its row of four bytes, with its kind and the row's length in their columns.
    assert_eq!(r.last_event_bytes(), 6);
    let mut n = 1;
    while r.next_event().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 1_000_000);
}

/// A process that dies while its trace has room set aside past a file-size limit leaves zeros
/// after its last frame: they end the stream as a torn frame does, whatever their length, and the
/// frames before them are read whole.
#[test]
fn zeros_where_a_frame_should_start_end_the_trace() {
    let mut w = TraceWriter::new(Vec::new(), &header(), Some(1)).unwrap();
    let evs = events_n(40);
    for ev in evs.iter().take(20) {
        w.push(ev).unwrap();
    }
    w.flush_frame().unwrap();
    let whole = w.finish().unwrap();
    let (before, _) = read_all(&whole).unwrap();
    for zeros in [1, 13, 14, 4096] {
        let mut bytes = whole.clone();
        bytes.extend(std::iter::repeat_n(0u8, zeros));
        let mut r = TraceReader::new(&bytes[..]).unwrap();
        let mut got = Vec::new();
        while let Some(ev) = r.next_event().unwrap() {
            got.push(ev);
        }
        assert_eq!(got, before, "{zeros} zeros");
        assert!(r.unwritten_tail(), "{zeros} zeros");
        assert!(r.truncated(), "no end record: {zeros} zeros");
        assert_eq!(r.offset(), whole.len() as u64);
    }
    // A zero after a frame marker is damage inside a frame, not the end.
    let mut bytes = whole.clone();
    bytes.extend([crate::frame::FRAME_MARKER, 0, 0, 0]);
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    while r.next_event().unwrap().is_some() {}
    assert!(!r.unwritten_tail());
}

/// A trace read while it is written: cut at any byte (a torn frame, or between two), read to its
/// end, then followed when the rest arrives: every event once, in order, frees by distance
/// resolved across the cut, and nothing to follow after the trace's end.
#[test]
fn a_trace_cut_anywhere_is_followed_to_its_end() {
    use std::io::{Cursor, Seek, SeekFrom};
    let bytes = write_events(&events_n(300), Some(1), 40);
    let (want, _) = read_all(&bytes).unwrap();
    let header_end = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
    for cut in (header_end..bytes.len()).step_by(37) {
        let mut r = TraceReader::new(Cursor::new(bytes[..cut].to_vec())).unwrap();
        let mut got = Vec::new();
        while let Some(ev) = r.next_event().unwrap() {
            got.push(ev);
        }
        assert!(r.follow(), "cut at {cut}");
        let at = r.offset();
        *r.input_mut().get_mut() = bytes.clone();
        r.input_mut().seek(SeekFrom::Start(at)).unwrap();
        while let Some(ev) = r.next_event().unwrap() {
            got.push(ev);
        }
        assert_eq!(got, want, "cut at {cut}");
        assert!(!r.truncated() && r.unresolved_events() == 0, "cut at {cut}");
        assert!(!r.follow(), "the end was read: cut at {cut}");
    }
}
