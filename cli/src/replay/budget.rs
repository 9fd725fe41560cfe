//! The encoded bytes in flight between a replay's decoding thread and its analysing one, held under
//! a budget: the decoder waits before handing over a batch that would exceed it, so memory in flight
//! is bounded by bytes whatever the records' sizes (a batch of large symbol records counts for
//! what it is, not as one of `IN_FLIGHT` batches).
//!
//! Never: block the decoder once the analysing side is gone (it closes the budget when it stops),
//! or refuse a batch when nothing is in flight (one batch larger than the budget still passes).
use std::sync::{Condvar, Mutex, MutexGuard};

/// Bytes in flight, and whether the analysing side has stopped.
pub struct Budget {
    limit: usize,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    used: usize,
    closed: bool,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit,
            state: Mutex::default(),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `bytes` more fit (or nothing is in flight), then counts them; false once the
    /// analysing side has stopped.
    pub fn take(&self, bytes: usize) -> bool {
        let mut s = self.lock();
        while !s.closed && s.used > 0 && s.used + bytes > self.limit {
            s = self.freed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.used += bytes;
        !s.closed
    }

    /// `bytes` taken before have been analysed.
    pub fn give(&self, bytes: usize) {
        let mut s = self.lock();
        s.used = s.used.saturating_sub(bytes);
        self.freed.notify_all();
    }

    /// The analysing side has stopped: nothing waits for it any more.
    pub fn close(&self) {
        self.lock().closed = true;
        self.freed.notify_all();
    }
}

/// Closes a budget when dropped (however the analysing side ends, a panic included).
pub struct CloseOnDrop<'a>(pub &'a Budget);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_taker_waits_for_room_and_never_once_the_other_side_is_gone() {
        let b = Arc::new(Budget::new(100));
        assert!(
            b.take(250),
            "one batch over the budget passes when nothing is in flight"
        );
        let waiting = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.take(10))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiting.is_finished(), "250 in flight: 10 more must wait");
        b.give(250);
        assert!(waiting.join().unwrap(), "room again");
        let blocked = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.take(95))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!blocked.is_finished());
        drop(CloseOnDrop(&b));
        assert!(
            !blocked.join().unwrap(),
            "closed: the taker is told to stop"
        );
    }
}
