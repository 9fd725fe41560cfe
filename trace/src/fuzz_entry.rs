//! Entry points for the fuzz targets and for the test that replays their corpus: the frame decoder
//! (a whole trace file) and the record decoder (one frame's payload, framed and checksummed here so
//! that the fuzzer spends its time on the records rather than on guessing checksums).
//!
//! Never: panic, hang or allocate without bound, whatever the bytes (see `reader`'s memory bound).
use crate::error::Error;
use crate::frame::{
    frame_crc, FrameHeader, FrameSeq, COLUMNS_VERSION, FLAG_COLUMNS, FLAG_NAMES, FLAG_ZSTD,
    SEQ_VERSION,
};
use crate::header::{Clock, Header, FORMAT_VERSION};
use crate::reader::TraceReader;
use crate::writer::TraceWriter;

/// Reads `bytes` as a trace file to its end; returns the number of events read.
pub fn read_trace(bytes: &[u8]) -> Result<u64, Error> {
    let mut r = TraceReader::new(bytes)?;
    let mut n = 0;
    while r.next_event()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Reads `input` as one frame's payload: its first byte picks the format version (modulo the
/// versions known, plus one), whether the payload is zstd-compressed (bit 7) and whether it is a names
/// frame (bit 6; an event frame of version 10 is in columns); the rest is the payload. Returns the number of events read.
pub fn read_payload(input: &[u8]) -> Result<u64, Error> {
    let Some((&select, payload)) = input.split_first() else {
        return Ok(0);
    };
    read_trace(&frame_payload(select, payload))
}

/// A trace whose one frame holds `payload`, as [`read_payload`] describes.
pub fn frame_payload(select: u8, payload: &[u8]) -> Vec<u8> {
    let version = u32::from(select & 0x3f) % FORMAT_VERSION + 1;
    let header = Header {
        pid: 1,
        ppid: 0,
        exe: "/fuzz".into(),
        argv: vec!["fuzz".into()],
        hostname: "fuzz".into(),
        start_unix_ns: 0,
        clock: Clock::Monotonic,
        clock_start_ns: 0,
        page_size: 4096,
        shim_version: "fuzz".into(),
        stack_depth: 64,
        forked: false,
    };
    let mut bytes = match TraceWriter::new(Vec::new(), &header, None).and_then(|w| w.finish()) {
        Ok(b) => b,
        Err(_) => return Vec::new(),
    };
    bytes[8..12].copy_from_slice(&version.to_le_bytes());
    let mut flags = 0;
    if select & 0x40 != 0 {
        flags |= FLAG_NAMES;
    } else if version >= COLUMNS_VERSION {
        // Event frames of version 10 on are in columns, as writers make them.
        flags |= FLAG_COLUMNS;
    }
    let compressed;
    let stored = if select & 0x80 != 0 {
        flags |= FLAG_ZSTD;
        compressed = zstd::bulk::compress(payload, 1).unwrap_or_default();
        &compressed[..]
    } else {
        payload
    };
    let seq = (version >= SEQ_VERSION).then(|| FrameSeq::default().encode());
    let fh = FrameHeader {
        flags,
        stored_len: stored.len() as u32,
        raw_len: payload.len() as u32,
        crc: frame_crc(seq.as_ref(), stored),
    };
    bytes.extend_from_slice(&fh.encode());
    if let Some(seq) = &seq {
        bytes.extend_from_slice(seq);
    }
    bytes.extend_from_slice(stored);
    bytes
}

#[cfg(test)]
mod tests {
    //! Replays the committed seeds (`fuzz/seeds/`: real traces) and fuzz corpus (`fuzz/corpus/`: what
    //! the fuzzer found) through the same entry points as the fuzz targets: CI runs this instead of
    //! the fuzzer (see `fuzz/README.md`).
    use super::*;
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// Every file of `fuzz/<kind>/<target>`, with its name.
    fn files(kind: &str, target: &str) -> Vec<(String, Vec<u8>)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz")
            .join(kind)
            .join(target);
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|e| {
                let path = e.expect("an entry").path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&path).expect("a corpus file"))
            })
            .collect();
        files.sort();
        files
    }

    /// Runs `read` over the seeds and corpus of `target`: the seeds (real traces) must read whole,
    /// and every input must finish, without a panic, within a second.
    fn replay(target: &str, read: fn(&[u8]) -> Result<u64, Error>) {
        let seeds = files("seeds", target);
        let found = files("corpus", target);
        assert!(seeds.len() >= 10, "{target}: {} seeds", seeds.len());
        assert!(found.len() >= 10, "{target}: {} inputs found", found.len());
        for (name, bytes) in &seeds {
            let n = read(bytes).unwrap_or_else(|e| panic!("{target}/{name}: {e}"));
            assert!(n > 0, "{target}/{name}: no events");
        }
        for (name, bytes) in &found {
            // Most are damaged and give an error; what matters is that they end, quickly.
            ends_quickly(read, bytes, || format!("{target}/{name}"));
        }
    }

    /// `read(input)` ends (without a panic) within a second; `what` names the input if not.
    fn ends_quickly(
        read: fn(&[u8]) -> Result<u64, Error>,
        input: &[u8],
        what: impl Fn() -> String,
    ) {
        let start = Instant::now();
        let _ = read(input);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(1), "{} took {took:?}", what());
    }

    #[test]
    fn the_frames_corpus_replays() {
        replay("frames", read_trace);
    }

    #[test]
    fn the_records_corpus_replays() {
        replay("records", read_payload);
    }

    /// The short fuzz pass: `rounds` mutations of every seed of `target` through `read`, each of
    /// which must end without a panic within a second (the mutator's seed is printed on failure).
    fn mutated(target: &str, rounds: u64, read: fn(&[u8]) -> Result<u64, Error>) {
        for (i, (name, bytes)) in files("seeds", target).iter().enumerate() {
            for round in 0..rounds {
                let seed = (i as u64) << 32 | round;
                let input = crate::fuzz_mutate::Mutator::new(seed).mutate(bytes);
                ends_quickly(read, &input, || {
                    format!("{target}/{name} mutated with seed {seed}")
                });
            }
        }
    }

    #[test]
    fn mutated_traces_end_quickly_without_a_panic() {
        mutated("frames", 3000, read_trace);
    }

    #[test]
    fn mutated_payloads_end_quickly_without_a_panic() {
        mutated("records", 3000, read_payload);
    }
}
