//! The writer's polling: one look at the queue, what it puts on disk, and when the next look comes.
//! On the writer's thread in a loop with naps between looks; on a program thread, while the
//! helper threads are parked (see `on_demand`), until the queue is empty.
use std::time::{Duration, Instant};

use memshim_trace::EndReason;

use super::pace::{next_nap, DRAIN, NAP};
use super::{batch, Writer, BATCH_BYTES, FLUSH_EVERY, WAITING_BATCH_BYTES};
use crate::channel;
use crate::sys::queue::TryRecvError;

/// Empty polls in a row after which what is pending goes on disk (see `Writer::poll`).
const QUIET_POLLS: u32 = 2;

/// Where the writer's polling stands between two polls.
pub(crate) struct Pacing {
    last_flush: Instant,
    nap: Duration,
    /// Empty polls in a row.
    quiet: u32,
}

impl Pacing {
    pub(crate) fn new() -> Pacing {
        Pacing {
            last_flush: Instant::now(),
            nap: NAP,
            quiet: 0,
        }
    }
}

/// What a poll leaves to do.
enum Polled {
    /// It took a full batch (or the trace resumed after a failed exec): poll again at once.
    Again,
    /// The queue is empty: nap.
    Idle,
    /// The trace has ended.
    Done,
}

impl Writer {
    /// The writer's loop. It polls: it takes what is queued without blocking, then naps, so producers
    /// never have to wake it (a futex wake on a send costs a traced thread more than recording the
    /// event), and it never parks on the channel (see the module note). The nap follows the flow
    /// (see [`next_nap`]): every wake-up is a context switch the program's threads may feel, on a
    /// machine with few cores.
    pub(super) fn run(mut self) {
        let mut pacing = Pacing::new();
        loop {
            // Read before the queue is looked at: a ring after this cuts the coming nap short.
            let bell = crate::sys::doorbell::seen();
            match self.poll(&mut pacing) {
                Polled::Done => return,
                Polled::Again => {}
                Polled::Idle => crate::sys::doorbell::nap(bell, pacing.nap),
            }
        }
    }

    /// Does the writer's work on the calling thread until the queue is empty (see `on_demand`,
    /// which calls it on a program thread while the process has no helper thread); false once the
    /// trace has ended (the heap ran dry, or a write failed).
    pub(crate) fn drain_here(&mut self, pacing: &mut Pacing) -> bool {
        loop {
            match self.poll(pacing) {
                Polled::Done => return false,
                Polled::Again => {}
                Polled::Idle => return true,
            }
        }
    }

    /// One look at the queue: takes up to [`DRAIN`] messages, puts a frame on disk when one is due,
    /// and ends the trace when asked to.
    fn poll(&mut self, p: &mut Pacing) -> Polled {
        if crate::sys::own_heap::exhausted() {
            self.stop_for_memory();
            channel::memory_end_done();
            return Polled::Done;
        }
        if let Some(sig) = channel::signal_end() {
            self.close(EndReason::Signal(sig));
            channel::signal_end_done();
            return Polled::Done;
        }
        let mut step = Ok(None);
        let mut taken = 0;
        // The clock is read once per batch, not per message.
        while matches!(step, Ok(None)) && taken < DRAIN {
            let Some(rx) = self.rx.as_mut() else {
                return Polled::Done;
            };
            let mut msgs = std::mem::take(&mut self.batch);
            let ended = batch::take(rx, &mut msgs, &self.out);
            taken += msgs.len();
            for msg in msgs.drain(..) {
                // Each message may need memory: none more once the heap ran dry.
                if crate::sys::own_heap::exhausted() {
                    channel::count_dropped(1);
                } else if matches!(step, Ok(None)) {
                    step = self.handle(msg);
                }
            }
            self.batch = msgs;
            match ended {
                _ if crate::sys::own_heap::exhausted() => break,
                Some(TryRecvError::Empty) => break,
                Some(TryRecvError::Disconnected) => return Polled::Done,
                None => {}
            }
        }
        p.nap = next_nap(p.nap, taken);
        // Two polls in a row that found nothing after events came: the program paused (or is
        // about to die). What it did is put on disk now, not at the next 100 ms: SIGKILL then
        // loses nothing that reached the writer. One empty poll is not enough: a writer that
        // catches up with a flood finds the queue empty for a moment, and cutting a frame
        // there made traces 2% larger.
        p.quiet = if taken == 0 {
            p.quiet.saturating_add(1)
        } else {
            0
        };
        let idle = p.quiet >= QUIET_POLLS && self.out.pending_bytes() > 0;
        let step = step.and_then(|shutdown| {
            let batch = if self.out.get_ref().has_waiting() {
                WAITING_BATCH_BYTES
            } else {
                BATCH_BYTES
            };
            if idle || self.out.pending_bytes() >= batch || p.last_flush.elapsed() >= FLUSH_EVERY {
                self.flush()?;
                p.last_flush = Instant::now();
            }
            Ok(shutdown)
        });
        match step {
            Ok(None) if taken < DRAIN => Polled::Idle,
            Ok(None) => Polled::Again,
            Ok(Some((reason, ack))) => {
                let exec = matches!(reason, EndReason::Exec);
                self.close(reason);
                let _ = ack.try_send(());
                if exec && self.resume_after_failed_exec() {
                    p.last_flush = Instant::now();
                    return Polled::Again;
                }
                Polled::Done
            }
            Err(e) => {
                self.fail(&e);
                Polled::Done
            }
        }
    }
}
