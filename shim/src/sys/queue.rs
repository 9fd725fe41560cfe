//! The bounded queue every producer sends its messages on and the writer thread takes them from, in
//! place of a general channel. A producer reserves its place with one atomic add and then writes
//! its slot, so threads sending at once never retry: the channel's compare-and-swap on its tail,
//! retried with a spinning backoff whenever another thread won, was 30% of all samples of four
//! threads allocating on two cores. A producer waits only while the queue is full, and never parks
//! (see `channel::send`); the writer never waits on it.
//!
//! Order: messages are taken in the order their places were reserved. A producer reserves after
//! the call it reports made its effect and before anything the program does with it (a free is
//! sent before the real free, an allocation before the block is handed back), so a message that
//! another thread's call depends on is always ahead of it in the queue.
//!
//! # Safety
//! Slot `p % cap` is written only by the producer that reserved place `p`, once the slot's stamp
//! reads `p` (the writer is done with the slot's previous lap), and read only by the one consumer at
//! place `p`, once the stamp reads `p + 1` (written); the stamp's release store publishes what was
//! written and the acquire load that sees it receives it. So a slot is never written and read at
//! once, and a message is read exactly once. The consumer is one thread: [`Receiver`] is not
//! `Clone` and takes `&mut self`.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::record::msg::Msg;

struct Slot {
    stamp: AtomicU64,
    msg: UnsafeCell<MaybeUninit<Msg>>,
}

/// Keeps the producers' place counter off the line the consumer writes.
#[repr(align(128))]
struct Padded<T>(T);

struct Queue {
    slots: Box<[Slot]>,
    tail: Padded<AtomicU64>,
    /// The receiver was dropped: sends fail.
    closed: AtomicBool,
    senders: AtomicUsize,
}

// SAFETY: see the module note: each slot's message is reached by one thread at a time, handed over
// by its stamp.
unsafe impl Sync for Queue {}
// SAFETY: as above; a `Msg` may move between threads.
unsafe impl Send for Queue {}

/// Why a message was not sent.
#[derive(Debug)]
pub enum SendError {
    /// The receiver is gone.
    Disconnected,
    /// The caller gave up waiting on a full queue.
    GaveUp,
}

/// Why nothing was taken.
#[derive(Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing is ready now.
    Empty,
    /// Nothing will come: every sender is gone and the queue is empty.
    Disconnected,
}

/// A producer's end; clones share the queue.
pub struct Sender(Arc<Queue>);

/// The consumer's end.
pub struct Receiver {
    q: Arc<Queue>,
    head: u64,
}

/// A queue of `cap` slots (at least 2).
pub fn bounded(cap: usize) -> (Sender, Receiver) {
    let cap = cap.max(2);
    let slots = (0..cap as u64)
        .map(|i| Slot {
            stamp: AtomicU64::new(i),
            msg: UnsafeCell::new(MaybeUninit::uninit()),
        })
        .collect();
    let q = Arc::new(Queue {
        slots,
        tail: Padded(AtomicU64::new(0)),
        closed: AtomicBool::new(false),
        senders: AtomicUsize::new(1),
    });
    (Sender(q.clone()), Receiver { q, head: 0 })
}

impl Sender {
    /// Sends `msg`. While the queue is full it calls `full`, which naps and says whether to go on
    /// waiting; the message is handed back when the receiver is gone or `full` gave up.
    #[inline]
    pub fn send(&self, msg: Msg, mut full: impl FnMut() -> bool) -> Result<(), (SendError, Msg)> {
        let q = &*self.0;
        if q.closed.load(Ordering::Acquire) {
            return Err((SendError::Disconnected, msg));
        }
        let place = q.tail.0.fetch_add(1, Ordering::Relaxed);
        let slot = &q.slots[(place % q.slots.len() as u64) as usize];
        while slot.stamp.load(Ordering::Acquire) != place {
            // The place stays reserved: the queue is being closed (receiver gone) or abandoned (a
            // child made behind the shim's back), and nobody will read past it.
            if q.closed.load(Ordering::Acquire) {
                return Err((SendError::Disconnected, msg));
            }
            if !full() {
                return Err((SendError::GaveUp, msg));
            }
        }
        // SAFETY: see the module note: the stamp says the slot is this producer's to write.
        unsafe { (*slot.msg.get()).write(msg) };
        slot.stamp.store(place + 1, Ordering::Release);
        Ok(())
    }
}

impl Clone for Sender {
    fn clone(&self) -> Self {
        self.0.senders.fetch_add(1, Ordering::Relaxed);
        Sender(self.0.clone())
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.senders.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Receiver {
    /// The next message, if one is ready.
    #[inline]
    pub fn try_recv(&mut self) -> Result<Msg, TryRecvError> {
        let q = &*self.q;
        let cap = q.slots.len() as u64;
        let slot = &q.slots[(self.head % cap) as usize];
        if slot.stamp.load(Ordering::Acquire) != self.head + 1 {
            let gone = q.senders.load(Ordering::Acquire) == 0
                && q.tail.0.load(Ordering::Acquire) == self.head;
            return Err(if gone {
                TryRecvError::Disconnected
            } else {
                TryRecvError::Empty
            });
        }
        // SAFETY: see the module note: the stamp says the slot holds this place's message, written
        // once and read here once.
        let msg = unsafe { (*slot.msg.get()).assume_init_read() };
        slot.stamp.store(self.head + cap, Ordering::Release);
        self.head += 1;
        Ok(msg)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // Producers fail from now on; what is queued stays (the shim's memory, freed at exit).
        self.q.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(i: u64) -> Msg {
        Msg::Flush(i)
    }

    fn num(m: Msg) -> u64 {
        match m {
            Msg::Flush(i) => i,
            _ => unreachable!("only flushes are sent here"),
        }
    }

    #[test]
    fn messages_come_out_in_order_through_many_laps() {
        let (tx, mut rx) = bounded(4);
        for lap in 0..10u64 {
            for i in 0..4 {
                assert!(tx.send(msg(lap * 4 + i), || panic!("not full")).is_ok());
            }
            for i in 0..4 {
                assert_eq!(rx.try_recv().map(num).ok(), Some(lap * 4 + i));
            }
            assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
        }
    }

    #[test]
    fn a_full_queue_asks_and_a_gone_receiver_fails_sends() {
        let (tx, rx) = bounded(2);
        assert!(tx.send(msg(0), || true).is_ok());
        assert!(tx.send(msg(1), || true).is_ok());
        let mut asked = 0;
        let r = tx.send(msg(2), || {
            asked += 1;
            asked < 3
        });
        assert!(matches!(r, Err((SendError::GaveUp, _))));
        assert_eq!(asked, 3);
        drop(rx);
        assert!(matches!(
            tx.send(msg(3), || true),
            Err((SendError::Disconnected, _))
        ));
    }

    #[test]
    fn the_receiver_sees_the_senders_go() {
        let (tx, mut rx) = bounded(8);
        let tx2 = tx.clone();
        assert!(tx2.send(msg(5), || true).is_ok());
        drop(tx);
        drop(tx2);
        assert_eq!(rx.try_recv().map(num).ok(), Some(5));
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Disconnected)));
    }

    /// Four threads send 100,000 messages each through a small queue: every message arrives once,
    /// and each thread's in the order it sent them.
    #[test]
    fn threads_sending_at_once_lose_nothing_and_keep_their_order() {
        let (tx, mut rx) = bounded(64);
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..100_000u64 {
                        let sent = tx.send(msg(t << 32 | i), || {
                            std::thread::yield_now();
                            true
                        });
                        assert!(sent.is_ok());
                    }
                })
            })
            .collect();
        drop(tx);
        let mut next = [0u64; 4];
        let mut got = 0;
        loop {
            match rx.try_recv() {
                Ok(m) => {
                    let v = num(m);
                    let t = (v >> 32) as usize;
                    assert_eq!(v & 0xffff_ffff, next[t], "thread {t}'s order");
                    next[t] += 1;
                    got += 1;
                }
                Err(TryRecvError::Empty) => std::thread::yield_now(),
                Err(TryRecvError::Disconnected) => break,
            }
        }
        assert_eq!(got, 400_000);
        for t in threads {
            t.join().expect("joined");
        }
    }
}
