//! The writer takes messages from the queue a few at a time. Each heap event looks up its block in
//! a table of the live allocations larger than the cache (see
//! `memshim_trace::TraceWriter::lookup_of`); prefetching the entries of a whole batch before
//! encoding any of it lets their cache misses overlap, where one message at a time made the writer
//! wait for each in turn.
use memshim_trace::TraceWriter;

use crate::record::msg::Msg;
use crate::sys::prefetch::prefetch;
use crate::sys::queue::{Receiver, TryRecvError};
use crate::writer::output::TraceFile;

/// The most messages taken at once: enough misses in flight to fill the memory system, few enough
/// that the entries read first are still cached when their frees are encoded.
pub(super) const BATCH: usize = 32;

/// Moves up to [`BATCH`] messages from `rx` to `batch` (empty on entry) and prefetches what their
/// heap events will look up in `out`. It stops after the first message that is not a heap event: what
/// follows a shutdown or a flush request stays queued, as when messages were taken one by one.
/// Returns what ended the batch: a full batch or such a message (`None`), or the queue's state.
pub(super) fn take(
    rx: &mut Receiver,
    batch: &mut Vec<Msg>,
    out: &TraceWriter<TraceFile>,
) -> Option<TryRecvError> {
    let mut ended = None;
    while batch.len() < BATCH {
        match rx.try_recv() {
            Ok(msg) => {
                let heap = match msg {
                    Msg::Alloc { addr, .. } | Msg::Free { addr, .. } => {
                        prefetch(out.lookup_of(addr));
                        true
                    }
                    _ => false,
                };
                batch.push(msg);
                if !heap {
                    break;
                }
            }
            Err(e) => {
                ended = Some(e);
                break;
            }
        }
    }
    ended
}
