//! The sampler thread: every 100 ms it samples the C library's heap statistics and the resident set,
//! and checks whether the module map changed (dlopen, dlclose) and sends the new map. It is the only
//! place, besides start and exit, that walks the loader's list, so the writer never has to.
use std::io;
use std::time::Duration;

use crossbeam_channel::Sender;

use memshim_trace::Record;

use crate::msg::Msg;
use crate::{modules, sys};

const PERIOD: Duration = Duration::from_millis(100);

/// Starts the sampler thread for the process `pid`.
pub fn spawn(tx: Sender<Msg>, exe: String, pid: u32) -> io::Result<()> {
    let seen = modules::counters();
    crate::threads::spawn(c"memshim-sampler", move || {
        let mut seen = seen;
        loop {
            std::thread::sleep(PERIOD);
            if sys::getpid() != pid {
                return;
            }
            if tx
                .send(Msg::Record(Record::HeapStats(crate::heapstats::sample())))
                .is_err()
            {
                return;
            }
            let now = modules::counters();
            if now != seen {
                seen = now;
                if tx.send(Msg::Modules(modules::scan(&exe))).is_err() {
                    return;
                }
            }
        }
    })
}
