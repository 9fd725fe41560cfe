//! The end of a trace: what producers already sent is drained, return addresses are symbolized in
//! the process (within a time budget), the end record is written and the user is told where the
//! trace is; or, on a write error, tracing stops and the program goes on.
use std::io;
use std::time::Duration;

use memshim_trace::{End, EndReason, Event, Note, Record};

use super::Writer;
use crate::record::msg::Msg;
use crate::sys::queue::TryRecvError;
use crate::{channel, sys::clock, writer::symbolize};

/// Time allowed for in-process symbolization at exit.
const SYMBOLIZE_BUDGET: Duration = Duration::from_secs(3);

impl Writer {
    /// Drains what producers already sent, symbolizes, writes the end and says where the trace is.
    pub(super) fn close(&mut self, reason: EndReason) {
        let result = self.drain_and_end(reason);
        let lost = self.out.get_mut().finish_pending();
        match (result, lost) {
            (Ok(()), None) => channel::say(&format!(
                "trace written to {}; report it with: memshim report {}",
                self.path.display(),
                self.path.display()
            )),
            (Ok(()), Some((n, e))) => channel::warn(&format!(
                "trace written to {} without {n} bytes of its frames ({e}); the report says which are missing",
                self.path.display()
            )),
            (Err(e), _) => self.fail(&e),
        }
    }

    /// Ends the trace for a signal, on the thread that took it: the writer was parked (see
    /// `on_demand`), and nothing else uses it.
    pub(crate) fn end_on_signal(&mut self, sig: i32) {
        self.close(EndReason::Signal(sig));
    }

    fn drain_and_end(&mut self, reason: EndReason) -> io::Result<()> {
        // At exec the queue is kept: an exec that fails goes on in this trace (see `exec`).
        let keep_queue = matches!(reason, EndReason::Exec);
        if let Some(mut rx) = self.rx.take() {
            // At a signal, producers have stopped; what they sent before is all there is.
            loop {
                match rx.try_recv() {
                    Ok(Msg::Shutdown { ack, .. }) => {
                        let _ = ack.try_send(());
                    }
                    // Out of memory, what waits is dropped (counted): recording it would need more.
                    Ok(_) if matches!(reason, EndReason::Failure) => channel::count_dropped(1),
                    Ok(msg) => {
                        self.handle(msg)?;
                    }
                    Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
                }
            }
            if keep_queue {
                self.rx = Some(rx);
            }
            // Dropping the receiver here makes any late sender fail at once instead of waiting.
        }
        // The thin mode's totals were last sent by the sampler, up to 100 ms ago (never, in a
        // process that dies sooner); the other ends send them before they stop the producers.
        if matches!(reason, EndReason::Signal(_)) {
            if let Some(totals) = crate::record::sampling::totals_record() {
                self.handle(Msg::Record(totals))?;
            }
        }
        // Not at exec (the new image must not wait) nor in a dying process (the signal's handler
        // waits): `memshim report` names the frames offline from the module map.
        let symbolize = !matches!(
            reason,
            EndReason::Exec | EndReason::Signal(_) | EndReason::Failure
        );
        if self.cfg.symbolize && symbolize {
            let t = clock::monotonic_ns();
            let addrs: Vec<u64> = self.addresses.iter().copied().collect();
            let outcome = symbolize::resolve(&addrs, SYMBOLIZE_BUDGET);
            for chunk in outcome.symbols.chunks(4096) {
                self.out.push(&Event {
                    t,
                    tid: 0,
                    record: Record::Symbols(chunk.to_vec()),
                })?;
            }
            if let Some(text) = outcome.note {
                self.out.push(&Event {
                    t,
                    tid: 0,
                    record: Record::Note(Note { text }),
                })?;
            }
        }
        if let Some(text) = self.out.get_ref().waiting_note() {
            self.out.push(&Event {
                t: clock::monotonic_ns(),
                tid: 0,
                record: Record::Note(Note { text }),
            })?;
        }
        let t = clock::monotonic_ns();
        for p in self.placements.finish() {
            self.out.push(&Event {
                t,
                tid: 0,
                record: Record::Placement(Box::new(p)),
            })?;
        }
        self.flush()?;
        if keep_queue {
            self.exec_mark = Some(self.mark());
        }
        self.out.push(&Event {
            t: clock::monotonic_ns(),
            tid: 0,
            record: Record::End(End {
                reason,
                dropped_events: channel::dropped(),
            }),
        })?;
        self.out.flush_frame()
    }

    /// The shim's own heap could not get memory from the kernel (an address-space limit reached):
    /// the trace ends here with a note saying so, and the program goes on untraced. What is queued
    /// is still written (the heap's reserve covers it).
    pub(super) fn stop_for_memory(&mut self) {
        let text = "the shim could not map memory for its own use (the process reached its \
                    address-space limit); tracing stopped here and the program went on";
        let noted = self.out.push(&Event {
            t: clock::monotonic_ns(),
            tid: 0,
            record: Record::Note(Note { text: text.into() }),
        });
        match noted {
            Ok(()) => self.close(EndReason::Failure),
            Err(e) => return self.fail(&e),
        }
        channel::warn(&format!(
            "no memory left for the shim (address-space limit); the trace {} ends here, the program continues",
            self.path.display()
        ));
    }

    /// Gives up after a write error: the trace so far is kept, the program goes on untraced.
    pub(super) fn fail(&mut self, e: &io::Error) {
        self.rx = None;
        channel::fail(&format!(
            "cannot write the trace file {} (pid {}): {e}",
            self.path.display(),
            self.pid
        ));
    }
}
