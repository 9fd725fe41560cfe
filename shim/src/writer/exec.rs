//! An exec that fails: the end written before it is taken back and the trace goes on, so the
//! process stays one trace (an exec that succeeds replaces the image, and this thread with it, while
//! it waits for the outcome).
//!
//! Never: resume when the end cannot be cut off cleanly; the session then starts a new trace, as
//! before.
use std::time::Duration;

use super::output::ending::FileMark;
use super::Writer;
use crate::channel::{self, ExecOutcome};

impl Writer {
    /// The trace just before its end record: the file's end and the next frame's number.
    pub(super) fn mark(&self) -> (FileMark, u64) {
        (self.out.get_ref().mark(), self.out.next_frame())
    }

    /// After the end written at an exec: waits for the exec's outcome; true when it failed and the
    /// trace goes on (the end cut off, the queue kept).
    pub(super) fn resume_after_failed_exec(&mut self) -> bool {
        loop {
            match channel::exec_outcome() {
                ExecOutcome::Trying => std::thread::sleep(Duration::from_millis(1)),
                ExecOutcome::Failed => break,
                ExecOutcome::None => return false,
            }
        }
        let Some((file, frame)) = self.exec_mark.take() else {
            channel::exec_resumed(false);
            return false;
        };
        if self.rx.is_none() || self.out.get_mut().cut_back(file).is_err() {
            channel::exec_resumed(false);
            return false;
        }
        self.out.take_back_frames(frame);
        channel::exec_resumed(true);
        true
    }
}
