//! The poller thread: collects the GPU times of event-timed copies (see `events`) and sends them to
//! the writer. Started by the sampler once the process makes its first CUDA memory call; it never
//! blocks on the GPU (queries only), and looks often only while copies are in flight.
use std::io;
use std::time::Duration;

use super::events;
use crate::record::msg::Msg;
use crate::sys;
use crate::sys::queue::Sender;
use crate::sys::threads::send_unparked;

/// How long to wait between rounds while copies are in flight, and while none are.
const BUSY: Duration = Duration::from_millis(1);
const IDLE: Duration = Duration::from_millis(10);

/// Starts the poller thread for the process `pid`.
pub fn spawn(tx: Sender, pid: u32) -> io::Result<()> {
    crate::sys::threads::spawn(c"memshim-events", move || loop {
        let mut open = true;
        let in_flight = events::poll(|r| open &= send_unparked(&tx, Msg::Record(r)));
        if !open || sys::getpid() != pid {
            return;
        }
        std::thread::sleep(if in_flight { BUSY } else { IDLE });
    })
}
