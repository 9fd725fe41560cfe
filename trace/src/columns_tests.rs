//! Tests of the columns: varints, damaged payloads, a trace read back as its version 9 rows are.
use super::*;

#[test]
fn varints_round_trip_at_every_width() {
    let mut out = Vec::new();
    let values = [0, 1, 127, 128, 16383, 16384, u64::from(u32::MAX), u64::MAX];
    for v in values {
        put(&mut out, v);
    }
    let mut c = Cursor(&out);
    for v in values {
        assert_eq!(c.u64(), Some(v));
    }
    assert_eq!(c.u64(), None);
    // Eleven bytes, or a tenth byte past 64 bits, is not a varint.
    assert_eq!(Cursor(&[0xff; 11]).u64(), None);
    assert_eq!(
        Cursor(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2]).u64(),
        None
    );
    for d in [0, 1, -1, i64::MAX, i64::MIN] {
        assert_eq!(unzig(zig(d)), d);
    }
}

/// A heap trace in columns reads back as written, and as the same events as the rows of
/// version 9: frees by distance and by address (of addresses never allocated), several
/// threads, other records between, frames cut between.
#[test]
fn a_trace_in_columns_reads_back_as_rows_do() {
    use crate::record::{Event, Free, Record};
    use crate::{Resume, TraceReader, TraceWriter};
    let mut events = Vec::new();
    let mut live: Vec<u64> = Vec::new();
    let mut state = 88172645463325252u64;
    for i in 0..30_000u64 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = state >> 33;
        let (t, tid) = (1_000_000 + i * 7000, 7 + (r % 3) as u32);
        let record = if i % 1000 == 0 {
            Record::Dropped(i)
        } else if live.len() > 50 && r % 5 < 2 {
            let addr = live.swap_remove((r as usize / 5) % live.len());
            Record::Free(Free {
                addr: if r.is_multiple_of(13) { addr + 8 } else { addr },
                realloc: r.is_multiple_of(2),
            })
        } else {
            let a = Alloc {
                func: ALLOC_FNS[(r % 9) as usize],
                addr: 0x5555_0000_0000 + (r % 4096) * 16,
                size: r % 5000,
                stack: (r % 40) as u32,
            };
            live.push(a.addr);
            Record::Alloc(a)
        };
        events.push(Event { t, tid, record });
    }
    let header = crate::tests::header();
    let columns = crate::tests::write_events(&events, Some(3), 9_999);
    // The same events in version 9's rows: its preamble, then frames appended in version 9.
    let mut rows = TraceWriter::new(Vec::new(), &header, None)
        .expect("writer")
        .finish()
        .expect("preamble");
    rows[8..12].copy_from_slice(&9u32.to_le_bytes());
    let at = Resume {
        version: 9,
        next_seq: 0,
        next_serial: 0,
    };
    let mut w = TraceWriter::append(rows, Some(3), at).expect("writer");
    for (i, ev) in events.iter().enumerate() {
        w.push(ev).expect("push");
        if i % 9_999 == 9_998 {
            w.flush_frame().expect("flush");
        }
    }
    let rows = w.finish().expect("finish");
    let read = |bytes: &[u8]| {
        let mut r = TraceReader::new(bytes).expect("header");
        let mut out = Vec::new();
        while let Some(ev) = r.next_event().expect("reads") {
            out.push(ev);
        }
        (r.version(), out)
    };
    let (now, from_columns) = read(&columns);
    let (v9, from_rows) = read(&rows);
    assert_eq!((now, v9), (crate::FORMAT_VERSION, 9));
    assert_eq!(from_columns, events);
    assert_eq!(from_rows, events);
    assert!(
        columns.len() < rows.len(),
        "{} {}",
        columns.len(),
        rows.len()
    );
}

#[test]
fn damaged_payloads_are_errors_never_panics() {
    let mut c = Columns::default();
    let a = Alloc {
        func: AllocFn::Calloc,
        addr: 0,
        size: 100,
        stack: 3,
    };
    c.alloc(1, 0, &a, 32);
    c.free(0, 0, 5, true);
    c.free_back(
        2,
        1,
        &FreeBack {
            back: 7,
            realloc: false,
        },
    );
    c.other(&[1, 2, 3]);
    let mut payload = Vec::new();
    c.write(&mut payload);
    let all = read_all(&payload).expect("whole");
    assert_eq!(all.len(), 4);
    assert_eq!(all[3], Stored::Other(&[1, 2, 3]));
    assert_eq!(
        all[0],
        Stored::Heap(1, 0, Record::Alloc(Alloc { addr: 32, ..a }))
    );
    for cut in 0..payload.len() {
        assert!(read_all(&payload[..cut]).is_err(), "cut at {cut}");
    }
    for i in 0..payload.len() {
        for b in [0, 13, 14, 0x80, 0xff] {
            let mut bad = payload.clone();
            bad[i] = b;
            let _ = read_all(&bad);
        }
    }
}

/// Every event of a payload, or the first error.
fn read_all(payload: &[u8]) -> Result<Vec<Stored<'_>>, String> {
    let mut events = ColumnEvents::open(payload)?;
    let columns_start = events.at[KINDS];
    let mut out = Vec::new();
    let mut bytes = 0;
    while let Some((ev, n)) = events.next(payload)? {
        out.push(ev);
        bytes += n;
    }
    // Each column byte is counted to the event that took it.
    assert_eq!(bytes, payload.len() - columns_start);
    Ok(out)
}
