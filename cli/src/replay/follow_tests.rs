//! A trace followed while it grows: each reading decodes only the new frames, a torn frame is read
//! once it is whole, and a trace cut back or replaced is read again from its start.
use std::path::{Path, PathBuf};

use memshim_trace::{
    Alloc, AllocFn, Clock, End, EndReason, Event, Free, Header, Record, TraceWriter,
};

use super::follow::Following;

fn header() -> Header {
    Header {
        pid: 7,
        ppid: 1,
        exe: "/bin/prog".into(),
        argv: vec!["prog".into()],
        hostname: "elsewhere".into(),
        start_unix_ns: 1,
        clock: Clock::Monotonic,
        clock_start_ns: 0,
        page_size: 4096,
        shim_version: "test".into(),
        stack_depth: 64,
        forked: false,
    }
}

/// A trace of `frames` frames, each allocating 100 B at a new address and freeing the block the
/// frame before allocated, then an end when `end`; with the byte offset after each frame.
fn trace(frames: u64, end: bool) -> (Vec<u8>, Vec<usize>) {
    let mut w = TraceWriter::new(Vec::new(), &header(), Some(1)).unwrap();
    let mut after = Vec::new();
    for i in 0..frames {
        let ev = |t, record| Event { t, tid: 1, record };
        w.push(&ev(
            i * 10,
            Record::Alloc(Alloc {
                func: AllocFn::Malloc,
                addr: 0x1000 + i * 0x100,
                size: 100,
                stack: 0,
            }),
        ))
        .unwrap();
        if i > 0 {
            w.push(&ev(
                i * 10 + 1,
                Record::Free(Free {
                    addr: 0x1000 + (i - 1) * 0x100,
                    realloc: false,
                }),
            ))
            .unwrap();
        }
        w.flush_frame().unwrap();
        after.push(w.get_ref().len());
    }
    if end {
        w.push(&Event {
            t: frames * 10,
            tid: 0,
            record: Record::End(End {
                reason: EndReason::Exit,
                dropped_events: 0,
            }),
        })
        .unwrap();
    }
    (w.finish().unwrap(), after)
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("memshim-follow-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// (allocations, frees, live bytes) as the replay says now.
fn heap(f: &mut Following) -> (u64, u64, u64) {
    let r = f.read().unwrap();
    (r.heap.allocations, r.heap.frees, r.heap.live_bytes)
}

#[test]
fn a_second_reading_decodes_only_the_frames_written_since_the_first() {
    let dir = Scratch::new("grow");
    let file = dir.path().join("prog.7.mshim");
    let (bytes, after) = trace(50, true);
    std::fs::write(&file, &bytes[..after[19]]).unwrap();
    let mut f = Following::open(&file).unwrap();
    assert_eq!(heap(&mut f), (20, 19, 100));
    assert_eq!(f.frames_last_read(), 20);
    // Nothing new: nothing decoded.
    assert_eq!(heap(&mut f), (20, 19, 100));
    assert_eq!(f.frames_last_read(), 0);
    // Thirty more frames and half of the next one (torn): only the thirty, whole.
    std::fs::write(&file, &bytes[..after[49] + 5]).unwrap();
    assert_eq!(heap(&mut f), (50, 49, 100));
    assert_eq!(f.frames_last_read(), 30);
    // The end, once written.
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(heap(&mut f), (50, 49, 100));
    assert_eq!(f.frames_last_read(), 1);
    let r = f.read().unwrap();
    assert!(r.end.is_some() && !r.truncated);
    assert_eq!(f.restarts(), 0);
}

#[test]
fn a_frame_torn_at_one_reading_is_read_whole_at_the_next() {
    let dir = Scratch::new("torn");
    let file = dir.path().join("prog.7.mshim");
    let (bytes, after) = trace(3, false);
    std::fs::write(&file, &bytes[..after[1] + 3]).unwrap();
    let mut f = Following::open(&file).unwrap();
    assert_eq!(heap(&mut f), (2, 1, 100));
    assert!(f.read().unwrap().truncated);
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(heap(&mut f), (3, 2, 100));
    assert_eq!(f.frames_last_read(), 1);
}

#[test]
fn a_trace_cut_back_or_replaced_is_read_again_from_its_start() {
    let dir = Scratch::new("cut");
    let file = dir.path().join("prog.7.mshim");
    let (bytes, after) = trace(10, false);
    std::fs::write(&file, &bytes).unwrap();
    let mut f = Following::open(&file).unwrap();
    assert_eq!(heap(&mut f), (10, 9, 100));
    // Cut back to four frames (the same file, shorter than what was read).
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(after[3] as u64)
        .unwrap();
    assert_eq!(heap(&mut f), (4, 3, 100));
    assert_eq!((f.restarts(), f.frames_last_read()), (1, 4));
    // Another file put in its place: a new trace, read from its start.
    let (other, _) = trace(6, true);
    let next = dir.path().join("next.mshim");
    std::fs::write(&next, &other).unwrap();
    std::fs::rename(&next, &file).unwrap();
    assert_eq!(heap(&mut f), (6, 5, 100));
    assert_eq!((f.restarts(), f.frames_last_read()), (2, 7));
}
