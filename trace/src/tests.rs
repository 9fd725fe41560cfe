//! Round trips, and every way a trace can be damaged: empty, cut at any byte, overwritten.
use crate::*;

pub(crate) fn header() -> Header {
    Header {
        pid: 42,
        ppid: 1,
        exe: "/bin/prog".into(),
        argv: vec!["prog".into(), "--flag".into()],
        hostname: "host".into(),
        start_unix_ns: 1_700_000_000_000_000_000,
        clock: Clock::Monotonic,
        clock_start_ns: 5_000,
        page_size: 4096,
        shim_version: "0.1.0".into(),
        stack_depth: 64,
        forked: false,
    }
}

fn events() -> Vec<Event> {
    events_n(2000)
}

/// [`events_n`] without the kinds a trace of `version` cannot hold (its reader rejects them).
pub(crate) fn events_of_version(n: u64, version: u32) -> Vec<Event> {
    events_n(n)
        .into_iter()
        .filter(|e| e.record.since_version() <= version)
        .collect()
}

pub(crate) fn events_n(n: u64) -> Vec<Event> {
    let mut v = vec![Event {
        t: 5_000_000,
        tid: 0,
        record: Record::Stack(StackDef {
            id: 0,
            frames: vec![0x5555_0000_1234, FrameRef::python(7, 42), 0x7fff_0000_0042],
        }),
    }];
    v.push(Event {
        t: 5_000_000,
        tid: 0,
        record: Record::PyString(PyString {
            id: 1,
            text: "train.py".into(),
        }),
    });
    v.push(Event {
        t: 5_000_000,
        tid: 0,
        record: Record::PyCode(PyCode {
            id: 7,
            name: 1,
            file: 1,
            first_line: 40,
        }),
    });
    // Version 12: a stack as a branch of the stack tree.
    v.push(Event {
        t: 5_000_000,
        tid: 0,
        record: Record::StackBranch(StackBranch {
            id: 1,
            parent: 0,
            first: 1,
            frames: vec![0x7fff_0000_0042, FrameRef::python(7, 43), 0x5555_0000_1240],
        }),
    });
    // Version 9: attached to a running process.
    v.push(Event {
        t: 5_000_000,
        tid: 0,
        record: Record::Attached(Box::new(Attached {
            process_age_ns: 12_500_000_000,
            slots: 14,
            modules: 3,
            unseen: "device memory".into(),
        })),
    });
    // Version 10: attached with the CUDA driver loaded.
    v.push(Event {
        t: 5_000_000,
        tid: 0,
        record: Record::AttachedCuda(Box::new(AttachedCuda {
            seen: true,
            detail: "/usr/lib/libcupti.so.13".into(),
            devices: vec![DeviceAtAttach {
                device: 0,
                used_bytes: 3 << 30,
                total_bytes: 80 << 30,
                process_bytes: Some(2 << 30),
            }],
        })),
    });
    // Version 8: PyTorch's allocator, from the inside.
    v.push(Event {
        t: 5_500_000,
        tid: 101,
        record: Record::TorchState(Box::new(TorchState {
            enabled: true,
            version: "2.11.0+cu130".into(),
            backend: "native".into(),
            detail: "trace tracker and out-of-memory observer attached".into(),
        })),
    });
    v.push(Event {
        t: 5_600_000,
        tid: 101,
        record: Record::Torch(TorchEvent {
            action: TorchAction::Alloc,
            device: 0,
            addr: 0x7f00_0020_0000,
            size: 3 << 20,
            stream: 0,
            stack: 0,
        }),
    });
    v.push(Event {
        t: 5_700_000,
        tid: 101,
        record: Record::TorchOom(Box::new(TorchOom {
            device: 0,
            requested: 1 << 30,
            device_total: 80 << 30,
            device_free: 12 << 20,
            largest_free: Some(20 << 20),
            stack: 0,
        })),
    });
    // Version 5: an event-timed copy and, later, its GPU time.
    v.push(Event {
        t: 6_000_000,
        tid: 101,
        record: Record::TimedCopy(Box::new(TimedCopy {
            copy: Transfer {
                api: CopyApi::MemcpyHtoDAsync,
                dst: 0x7000_0000_0000,
                src: 0x5555_0001_0000,
                size: 1 << 20,
                stream: 0x1234,
                duration_ns: 2_000,
                result: 0,
                device: 0,
                stack: 0,
            },
            timer: 1,
        })),
    });
    v.push(Event {
        t: 6_100_000,
        tid: 0,
        record: Record::CopyTime(CopyTime {
            timer: 1,
            gpu_ns: 65_536,
        }),
    });
    for i in 0..n {
        v.push(Event {
            // Not monotonic on purpose: threads reach the writer out of time order.
            t: (10_000 + i * 7 - (i % 3) * 5) * 1000,
            tid: 100 + (i % 4) as u32,
            record: Record::Alloc(Alloc {
                func: AllocFn::Malloc,
                addr: 0x5555_0000_0000 + i * 64,
                size: i % 300,
                stack: 0,
            }),
        });
        if i % 2 == 0 {
            v.push(Event {
                t: (10_001 + i * 7) * 1000,
                tid: 100,
                record: Record::Free(Free {
                    addr: 0x5555_0000_0000 + i * 64,
                    realloc: false,
                }),
            });
        }
    }
    v.push(Event {
        t: 99_999_000,
        tid: 0,
        record: Record::End(End {
            reason: EndReason::Exit,
            dropped_events: 0,
        }),
    });
    v
}

fn write(level: Option<i32>, frame_every: usize) -> Vec<u8> {
    write_events(&events(), level, frame_every)
}

pub(crate) fn write_events(events: &[Event], level: Option<i32>, frame_every: usize) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &header(), level).unwrap();
    for (i, ev) in events.iter().enumerate() {
        w.push(ev).unwrap();
        if i % frame_every == frame_every - 1 {
            w.flush_frame().unwrap();
        }
    }
    w.finish().unwrap()
}

/// The events in the order a reader returns them when they were written flushing every
/// `frame_every` pushes, and the number read after each whole frame: each flush writes the events
/// first and then the naming records (see `Record::names_frames`).
pub(crate) fn as_written(events: &[Event], frame_every: usize) -> (Vec<Event>, Vec<usize>) {
    let mut order = Vec::new();
    let mut boundaries = vec![0];
    for chunk in events.chunks(frame_every) {
        for names in [false, true] {
            let part: Vec<Event> = chunk
                .iter()
                .filter(|e| e.record.names_frames() == names)
                .cloned()
                .collect();
            if !part.is_empty() {
                order.extend(part);
                boundaries.push(order.len());
            }
        }
    }
    (order, boundaries)
}

/// Where a writer that appends to `bytes` carries on.
fn resume_point(bytes: &[u8]) -> Resume {
    let mut r = TraceReader::new(bytes).unwrap();
    while r.next_event().unwrap().is_some() {}
    r.resume()
}

pub(crate) fn read_all(bytes: &[u8]) -> Result<(Vec<Event>, bool), Error> {
    let mut r = TraceReader::new(bytes)?;
    let mut out = Vec::new();
    while let Some(ev) = r.next_event()? {
        out.push(ev);
    }
    Ok((out, r.truncated()))
}

#[test]
fn round_trip_plain_and_compressed() {
    for level in [None, Some(3)] {
        let bytes = write(level, 500);
        let (got, truncated) = read_all(&bytes).unwrap();
        assert_eq!(got, as_written(&events(), 500).0);
        assert!(!truncated);
        assert_eq!(TraceReader::new(&bytes[..]).unwrap().header(), &header());
    }
}

#[test]
fn empty_input_is_a_clear_error() {
    let err = read_all(&[]).err().unwrap();
    assert!(matches!(err, Error::Empty), "{err}");
    assert!(err.to_string().contains("empty"));
}

#[test]
fn foreign_file_is_rejected() {
    let err = read_all(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0")
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotATrace { .. }), "{err}");
    assert!(err.to_string().contains("not a memshim trace"));
}

#[test]
fn a_record_newer_than_the_traces_version_is_corrupt() {
    let ev = Event {
        t: 1,
        tid: 0,
        record: Record::Attached(Box::new(Attached {
            process_age_ns: 1,
            slots: 1,
            modules: 1,
            unseen: String::new(),
        })),
    };
    let mut bytes = write_events(&[ev], None, 1);
    // The same bytes, labelled as the version before attached records existed.
    bytes[8..12].copy_from_slice(&8u32.to_le_bytes());
    let msg = read_all(&bytes).expect_err("rejected").to_string();
    assert!(
        msg.contains("attached") && msg.contains("version 9") && msg.contains("version 8 trace"),
        "{msg}"
    );
}

#[test]
fn newer_version_names_both_versions() {
    let mut bytes = write(None, 100);
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let err = read_all(&bytes).err().unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("version {}", FORMAT_VERSION + 1))
            && msg.contains(&format!("versions 1 to {FORMAT_VERSION}")),
        "{msg}"
    );
}

#[test]
fn cut_at_every_byte_never_panics_and_keeps_whole_frames() {
    for level in [None, Some(1)] {
        let full = events_n(200);
        let bytes = write_events(&full, level, 60);
        let (full, boundaries) = as_written(&full, 60);
        let header_end = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
        for cut in 0..bytes.len() {
            match read_all(&bytes[..cut]) {
                Ok((got, truncated)) => {
                    assert!(cut >= header_end, "cut {cut} inside the header read fine");
                    assert!(truncated, "cut at {cut} not marked truncated");
                    assert_eq!(&full[..got.len()], &got[..], "cut at {cut}");
                    // Whole frames only.
                    assert!(
                        boundaries.contains(&got.len()),
                        "cut at {cut} gave {} events",
                        got.len()
                    );
                }
                Err(e) => {
                    assert!(
                        cut < header_end,
                        "cut at {cut} after the header failed: {e}"
                    );
                    assert!(
                        matches!(e, Error::Empty | Error::HeaderTruncated),
                        "cut at {cut}: {e}"
                    );
                }
            }
        }
    }
}

#[test]
fn garbage_in_a_frame_is_corruption_not_a_panic() {
    let bytes = write(Some(3), 300);
    let header_end = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
    let mut seed = 0x1234_5678_u32;
    for start in (header_end..bytes.len()).step_by(37) {
        let mut damaged = bytes.clone();
        for b in damaged[start..(start + 16).min(bytes.len())].iter_mut() {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            *b ^= (seed >> 24) as u8 | 1;
        }
        match read_all(&damaged) {
            Err(Error::CorruptFrame { offset, .. }) => assert!(offset as usize <= start),
            Err(e) => panic!("damage at {start}: unexpected error {e}"),
            // Damage to a length can make the last frame look torn; that is reported truncated.
            Ok((_, truncated)) => assert!(truncated, "damage at {start} went unnoticed"),
        }
    }
}

#[test]
fn stream_without_end_record_is_truncated() {
    let mut w = TraceWriter::new(Vec::new(), &header(), None).unwrap();
    for ev in events().iter().take(10) {
        w.push(ev).unwrap();
    }
    let bytes = w.finish().unwrap();
    let (got, truncated) = read_all(&bytes).unwrap();
    assert_eq!(got.len(), 10);
    assert!(truncated);
}

#[test]
fn version_1_traces_are_still_read() {
    use crate::frame::{codec, FrameHeader};
    use bincode::Options;
    // A version 1 trace: the same preamble, events stored as (dt, tid, record) with only the time
    // delta-coded.
    let mut bytes = write(None, 100);
    let header_end = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
    bytes.truncate(header_end);
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let evs = events_of_version(50, 1);
    let mut raw = Vec::new();
    let mut last = 0u64;
    for ev in &evs {
        let dt = ev.t.wrapping_sub(last) as i64;
        last = ev.t;
        codec(u64::MAX)
            .serialize_into(&mut raw, &(dt, ev.tid, &ev.record))
            .unwrap();
    }
    let fh = FrameHeader {
        flags: 0,
        stored_len: raw.len() as u32,
        raw_len: raw.len() as u32,
        crc: crc32fast::hash(&raw),
    };
    bytes.extend_from_slice(&fh.encode());
    bytes.extend_from_slice(&raw);
    let (got, _) = read_all(&bytes).unwrap();
    assert_eq!(got, evs);
}

#[test]
fn delta_coding_makes_heap_events_small() {
    // 1000 alloc/free pairs at nearby heap addresses, one thread: a few bytes per event, raw.
    let mut w = TraceWriter::new(Vec::new(), &header(), None).unwrap();
    let before = w.pending_bytes();
    for i in 0..1000u64 {
        let addr = 0x5555_5555_0000 + (i % 64) * 48;
        for record in [
            Record::Alloc(Alloc {
                func: AllocFn::Malloc,
                addr,
                size: 100 + i % 50,
                stack: (i % 7) as u32,
            }),
            Record::Free(Free {
                addr,
                realloc: false,
            }),
        ] {
            w.push(&Event {
                t: 1_000_000 + i * 150,
                tid: 4242,
                record,
            })
            .unwrap();
        }
    }
    let per_event = (w.pending_bytes() - before) as f64 / 2000.0;
    assert!(per_event < 8.0, "{per_event} bytes per event");
    let bytes = w.finish().unwrap();
    let (got, _) = read_all(&bytes).unwrap();
    assert_eq!(got.len(), 2000);
    assert!(
        matches!(&got[1998].record, Record::Alloc(a) if a.addr == 0x5555_5555_0000 + (999 % 64) * 48)
    );
}

#[test]
fn event_times_are_kept_to_the_microsecond() {
    let mut w = TraceWriter::new(Vec::new(), &header(), None).unwrap();
    let ev = |t| Event {
        t,
        tid: 1,
        record: Record::Dropped(0),
    };
    w.push(&ev(1_234_567_891)).unwrap();
    w.push(&ev(1_234_568_999)).unwrap();
    let (got, _) = read_all(&w.finish().unwrap()).unwrap();
    assert_eq!(got[0].t, 1_234_567_000);
    assert_eq!(got[1].t, 1_234_568_000);
}

#[test]
fn frames_appended_after_the_end_are_read() {
    let mut bytes = write(Some(3), 500);
    let at = resume_point(&bytes);
    let mut w = TraceWriter::append(&mut bytes, Some(3), at).unwrap();
    let extra = Event {
        t: 123_000,
        tid: 0,
        record: Record::Symbols(vec![Symbol {
            addr: 0x1234,
            frames: vec![SymFrame {
                function: Some("f".into()),
                file: None,
                line: 0,
            }],
        }]),
    };
    w.push(&extra).unwrap();
    w.finish().unwrap();
    let (got, truncated) = read_all(&bytes).unwrap();
    assert!(!truncated, "an orderly end stays orderly");
    assert_eq!(got.last(), Some(&extra));
    assert_eq!(got.len(), events().len() + 1);
}

#[test]
fn python_frames_are_told_from_addresses() {
    let f = FrameRef::python(7, 42);
    let own = |code, line| FrameRef::Python {
        code,
        line,
        lent: false,
    };
    assert_eq!(FrameRef::decode(f), own(7, 42));
    assert_eq!(
        FrameRef::decode(FrameRef::python_lent(7, 42)),
        FrameRef::Python {
            code: 7,
            line: 42,
            lent: true
        }
    );
    assert_eq!(
        FrameRef::decode(0x7fff_0000_0042),
        FrameRef::Native(0x7fff_0000_0042)
    );
    assert_eq!(
        FrameRef::decode(FrameRef::python(0x3FFF_FFFF, u32::MAX)),
        own(0x3FFF_FFFF, u32::MAX)
    );
}

#[test]
fn a_names_only_reader_skips_event_frames_and_keeps_every_name_and_the_end() {
    for level in [None, Some(3)] {
        let bytes = write(level, 300);
        let mut r = TraceReader::new(&bytes[..]).unwrap();
        r.names_only();
        let mut got = Vec::new();
        while let Some(ev) = r.next_event().unwrap() {
            got.push(ev);
        }
        let names: Vec<Event> = events()
            .into_iter()
            .filter(|e| e.record.names_frames())
            .collect();
        assert_eq!(got, names);
        assert!(!r.truncated(), "the end record is among the names");
        assert_eq!(
            r.offset(),
            bytes.len() as u64,
            "every frame was still checked"
        );
    }
}

/// A ring of buffers, as the performance workload frees them, plus the cases that stay plain frees.
pub(crate) fn ring_events(n: u64, keep: u64) -> Vec<Event> {
    let mut v = Vec::new();
    let addr = |i: u64| 0x5555_0000_0000 + (i * 7919 % 100_003) * 64;
    // Freed before any allocation of the trace: stays a plain Free.
    v.push(Event {
        t: 1_000,
        tid: 7,
        record: Record::Free(Free {
            addr: 0x7777_0000,
            realloc: false,
        }),
    });
    for i in 0..n {
        if i >= keep {
            v.push(Event {
                t: (2 + i) * 1_000,
                tid: 7,
                record: Record::Free(Free {
                    addr: addr(i - keep),
                    realloc: i % 5 == 0,
                }),
            });
        }
        v.push(Event {
            t: (2 + i) * 1_000,
            tid: 7,
            record: Record::Alloc(Alloc {
                func: AllocFn::Malloc,
                addr: addr(i),
                size: 16 + i % 4000,
                stack: 1,
            }),
        });
    }
    v
}

#[test]
fn frees_by_distance_round_trip_across_frames_and_compress() {
    let events = ring_events(20_000, 1000);
    for frame_every in [1, 7, 5000] {
        let bytes = write_events(&events, Some(3), frame_every);
        let (back, truncated) = read_all(&bytes).unwrap();
        assert!(truncated, "no End record in this stream");
        assert_eq!(back, events, "frame_every {frame_every}");
    }
    // The ring's frees are all one distance back, so once compressed they cost under a byte each
    // (their addresses, scattered over 6 MiB, would take two to three).
    let allocs_only: Vec<Event> = events
        .iter()
        .filter(|e| matches!(e.record, Record::Alloc(_)))
        .cloned()
        .collect();
    let with_frees = write_events(&events, Some(3), 5000).len();
    let without = write_events(&allocs_only, Some(3), 5000).len();
    assert!(
        with_frees - without < 19_000,
        "19000 frees added {} bytes to {without}",
        with_frees - without
    );
}

#[test]
fn a_free_by_distance_to_no_live_allocation_is_a_corrupt_frame() {
    // Hand-built: the writer never stores such a free, so it can only come from damage.
    let mut w = TraceWriter::new(Vec::new(), &header(), None).unwrap();
    w.push(&Event {
        t: 1_000,
        tid: 1,
        record: Record::FreeBack(FreeBack {
            back: 3,
            realloc: false,
        }),
    })
    .unwrap();
    let bytes = w.finish().unwrap();
    let err = read_all(&bytes).expect_err("an error");
    assert!(matches!(err, Error::CorruptFrame { .. }), "{err}");
    assert!(
        err.to_string().contains("a free refers to allocation"),
        "{err}"
    );
}
