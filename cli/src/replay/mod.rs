//! Replays one trace file through the analyses, keeping what the report needs: the header, how the
//! trace ended, stacks, modules and symbols. Memory stays bounded by the live set and the number of
//! distinct stacks, whatever the file's size.
//!
//! # Memory bound
//! Reading costs at most the reader's bound (two 64 MiB frame buffers, an 8 MiB ring and one record
//! of at most 16 MiB encoded: see `memshim_trace::TraceReader`) plus the decoded events in flight
//! between the two threads: at most `IN_FLIGHT_BYTES` encoded (see `budget`) plus one batch (at most
//! `BATCH_BYTES` and one record). Everything else grows only with what the trace defines: live
//! blocks (about 25 bytes each in the heap analysis: see `analysis::live_blocks`), distinct stacks,
//! modules and names.
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use std::sync::mpsc::{Receiver, SyncSender};

use anyhow::{bail, Context, Result};
use memshim_trace::{Event, TraceReader};

mod apply;
mod budget;
mod finish;
pub mod follow;
#[cfg(test)]
mod follow_tests;
mod frame_damage;
mod replayed;
pub mod torch_pass;

pub use frame_damage::FrameDamage;
pub use replayed::*;

use apply::{apply, prefetch, PREFETCH_AHEAD};
use finish::{finish, read_end, ReadEnd};

/// Reads and analyses the trace at `path`. A corrupt frame stops the replay but keeps what came
/// before it (marked truncated, with the reason in `corrupt`); an unreadable header is an error.
pub fn replay(path: &Path) -> Result<Replayed> {
    replay_with(path, Detail::Full)
}

/// How much of a trace a replay analyses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Detail {
    /// Everything.
    Full,
    /// Only what naming frames needs: stacks, modules, symbols (the analyses stay empty).
    Symbols,
}

/// A time window, in seconds since each process started: events of the program outside it are left
/// out, so leaks are what the window allocated and still held at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub since_s: Option<f64>,
    pub until_s: Option<f64>,
}

impl Window {
    fn is_set(&self) -> bool {
        self.since_s.is_some() || self.until_s.is_some()
    }

    /// True when an event at `t` (clock ns) of a process that started at `start` is inside.
    fn contains(&self, t: u64, start: u64) -> bool {
        let s = t.saturating_sub(start) as f64 / 1e9;
        self.since_s.is_none_or(|a| s >= a) && self.until_s.is_none_or(|b| s <= b)
    }
}

/// Reads the trace at `path` and analyses the events of the program inside `window`.
pub fn replay_window(path: &Path, window: Window) -> Result<Replayed> {
    replay_inner(path, Detail::Full, window)
}

/// Reads the trace at `path`, analysing it as far as `detail` asks.
pub fn replay_with(path: &Path, detail: Detail) -> Result<Replayed> {
    replay_inner(path, detail, Window::default())
}

fn replay_inner(path: &Path, detail: Detail, window: Window) -> Result<Replayed> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let progress = crate::progress::for_file(path, &file);
    let input = progress.wrap_read(BufReader::with_capacity(1 << 20, file));
    let mut reader =
        TraceReader::new(input).with_context(|| format!("cannot read {}", path.display()))?;
    if detail == Detail::Symbols {
        // Since format 4 the event frames can be skipped whole (checked, not decoded).
        reader.names_only();
    }
    let mut r = Replayed::new(path, reader.header().clone());
    // Decoding (decompression, bincode) runs on its own thread, one frame's events at a time, while
    // this one analyses: the two halves of a replay take about as long as each other.
    // Emptied batches go back to be filled again: writing events into a fresh allocation each
    // time cost the decoding thread page faults and cache misses.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(IN_FLIGHT);
    let (empty_tx, empty_rx) = std::sync::mpsc::sync_channel::<Vec<Event>>(IN_FLIGHT);
    let budget = budget::Budget::new(IN_FLIGHT_BYTES);
    let outcome = std::thread::scope(|scope| {
        let budget = &budget;
        scope.spawn(move || decode(&mut reader, tx, empty_rx, budget));
        let _close = budget::CloseOnDrop(budget);
        let mut outcome = None;
        for batch in rx {
            match batch {
                Batch::Events(mut batch, bytes) => {
                    let start = r.header.clock_start_ns;
                    let mut events = batch.drain(..);
                    while let Some(ev) = events.next() {
                        if let Some(ahead) = events.as_slice().get(PREFETCH_AHEAD) {
                            prefetch(&r, ahead);
                        }
                        let outside = window.is_set()
                            && ev.tid != 0
                            && !window.contains(ev.t, start)
                            && !ev.record.names_frames();
                        if outside {
                            continue;
                        }
                        if detail == Detail::Full || ev.record.names_frames() {
                            apply(&mut r, ev);
                        }
                    }
                    drop(events);
                    budget.give(bytes);
                    let _ = empty_tx.try_send(batch);
                }
                Batch::End(end) => outcome = Some(Ok(end)),
                Batch::Failed(e) => outcome = Some(Err(e)),
            }
        }
        outcome
    });
    let end = match outcome {
        Some(Ok(end)) => end,
        Some(Err(e)) => {
            return Err(e).with_context(|| format!("cannot read {}", path.display()));
        }
        None => bail!("the reader of {} stopped unexpectedly", path.display()),
    };
    progress.finish_and_clear();
    let window_note = window.is_set().then(|| {
        let at = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |s| format!("{s} s"));
        format!(
            "only the program's events from {} to {} (--since/--until): leaks are what that window allocated and still held at its end",
            at(window.since_s, "the start"),
            at(window.until_s, "the end")
        )
    });
    finish(&mut r, end, window_note, path, detail);
    Ok(r)
}

/// Events per batch handed from the decoding thread to the analysing one.
const BATCH: usize = 8192;
/// Encoded bytes after which a batch is handed over even when it holds fewer events: a batch of
/// large records (symbols, stacks) stays small (at most this plus one record,
/// [`memshim_trace::MAX_RECORD_BYTES`], encoded).
const BATCH_BYTES: usize = 4 << 20;
/// Batches that may wait for the analysing thread.
const IN_FLIGHT: usize = 16;
/// Encoded bytes of the batches that may wait for it (see `budget`): what the decoded events in
/// flight cost is a small multiple of this (a crafted list of empty records at most 20 times).
const IN_FLIGHT_BYTES: usize = 32 << 20;

/// What the decoding thread hands over.
enum Batch {
    /// Events and their encoded bytes.
    Events(Vec<Event>, usize),
    End(ReadEnd),
    Failed(memshim_trace::Error),
}

/// Reads every event, in batches; a corrupt frame ends the stream (what came before is kept).
fn decode<R: std::io::Read>(
    reader: &mut TraceReader<R>,
    tx: SyncSender<Batch>,
    empty: Receiver<Vec<Event>>,
    budget: &budget::Budget,
) {
    let fresh = || {
        empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH))
    };
    let mut batch = fresh();
    let mut batch_bytes = 0;
    let end = |reader: &TraceReader<R>, truncated, corrupt| {
        Batch::End(read_end(reader, truncated, corrupt))
    };
    let end = loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                batch.push(ev);
                batch_bytes += reader.last_event_bytes();
                if batch.len() == BATCH || batch_bytes >= BATCH_BYTES {
                    let full = std::mem::replace(&mut batch, fresh());
                    let bytes = std::mem::take(&mut batch_bytes);
                    if !budget.take(bytes) || tx.send(Batch::Events(full, bytes)).is_err() {
                        return;
                    }
                }
            }
            Ok(None) => break end(reader, reader.truncated(), None),
            Err(e @ memshim_trace::Error::CorruptFrame { .. }) => {
                break end(reader, true, Some(e.to_string()))
            }
            Err(e) => break Batch::Failed(e),
        }
    };
    if budget.take(batch_bytes) {
        let _ = tx.send(Batch::Events(batch, batch_bytes));
    }
    let _ = tx.send(end);
}
