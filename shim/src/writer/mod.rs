//! The writer thread: turns messages into trace records, maps stack hashes to small ids, and puts a
//! frame on disk as soon as the queue goes quiet and at least every 100 ms, so SIGKILL loses at
//! most what had not reached the writer yet, or the last 100 ms of a flood.
//!
//! Never: call into the loader (`dl_iterate_phdr`, `dlsym`) while producers may be waiting on it, or
//! block on anything a producer could hold. That includes parking while the queue is empty: a
//! parked thread needs a thread-local whose destructor glibc registers under the loader's lock,
//! which a producer holds while a library it is loading allocates (see `sys::queue`). Its own
//! allocations go through the shim's allocator.
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use rustc_hash::{FxHashMap, FxHashSet};

use memshim_trace::{
    Alloc, EndReason, Event, Free, Map, Module, ModuleUnload, PyCode, PyString, ReallocFailed,
    Record, StackBrancher, StackDef, TraceWriter, Unmap,
};

mod batch;
mod end;
mod exec;
pub(crate) mod output;
mod pace;
pub(crate) mod placement;
mod poll;
pub(crate) mod symbolize;

pub(crate) use poll::Pacing;

use crate::config::Config;
use crate::record::msg::{Msg, StackedMsg};
use crate::sys::queue::Receiver;
use crate::writer::output::TraceFile;
use crate::writer::placement::Placements;
use crate::{channel, sys::clock};

/// At most this long between two frames on disk.
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// A frame is cut when this many encoded bytes are pending.
const BATCH_BYTES: usize = 1 << 20;
/// The same while frames wait in memory because the file cannot take them (a full disk): what
/// lands at the end is the newest frames that the space reserved for it takes, so they must be
/// small for the last moments to be among them.
const WAITING_BATCH_BYTES: usize = 64 << 10;
/// What the report says once the program closed the descriptors libunwind reads through.
const UNWINDER_LOST_NOTE: &str =
    "the program closed the descriptors the fast unwinder (libunwind) \
     uses: later stacks come from libgcc's unwinder, the same frames at several times the cost";
/// Starts the writer thread.
pub fn spawn(w: Writer) -> io::Result<()> {
    crate::sys::threads::spawn(c"memshim-writer", move || w.run())
}

/// The writer's state.
pub struct Writer {
    rx: Option<Receiver>,
    out: TraceWriter<TraceFile>,
    path: PathBuf,
    cfg: Config,
    pid: u32,
    /// By stack hash, looked up for every event: hashes are already well mixed, so Fx, not SipHash.
    stack_ids: FxHashMap<u64, (u32, bool)>,
    /// Each new stack as the frames it adds to the trace's stack tree.
    brancher: StackBrancher,
    addresses: FxHashSet<u64>,
    modules: HashMap<(String, u64), ()>,
    py_strings: HashMap<Box<str>, u32>,
    dropped_written: u64,
    /// The note that libunwind was given up is in the trace.
    unwinder_noted: bool,
    placements: Placements,
    /// The messages being handled (see `batch`), kept to reuse its memory.
    batch: Vec<Msg>,
    /// Where the trace stood before the end written at an exec (see `exec`): the file's end and
    /// the next frame's number.
    exec_mark: Option<(output::ending::FileMark, u64)>,
}

impl Writer {
    /// A writer for `path`, which already holds the header.
    pub fn new(
        rx: Receiver,
        out: TraceWriter<TraceFile>,
        path: PathBuf,
        initial_modules: Vec<Module>,
        cfg: Config,
        pid: u32,
    ) -> Writer {
        let mut w = Writer {
            rx: Some(rx),
            out,
            path,
            cfg,
            pid,
            stack_ids: FxHashMap::default(),
            brancher: StackBrancher::default(),
            addresses: FxHashSet::default(),
            modules: HashMap::new(),
            py_strings: HashMap::new(),
            dropped_written: 0,
            unwinder_noted: false,
            placements: Placements::default(),
            batch: Vec::with_capacity(batch::BATCH),
            exec_mark: None,
        };
        let topology = w.out.push(&Event {
            t: clock::monotonic_ns(),
            tid: 0,
            record: Record::Topology(crate::probes::topology::read()),
        });
        if let Err(e) = topology {
            w.fail(&e);
        }
        if let Some(rank) = w.cfg.rank.clone() {
            let pushed = w.out.push(&Event {
                t: clock::monotonic_ns(),
                tid: 0,
                record: Record::Rank(Box::new(rank)),
            });
            if let Err(e) = pushed {
                w.fail(&e);
            }
        }
        let sampling = crate::record::sampling::mean();
        let first = if sampling > 0 {
            w.out.push(&Event {
                t: clock::monotonic_ns(),
                tid: 0,
                record: Record::Sampling(sampling),
            })
        } else {
            Ok(())
        };
        if let Err(e) = first.and_then(|()| w.update_modules(initial_modules)) {
            w.fail(&e);
        }
        w
    }

    /// Records one message; returns the shutdown request if it was one.
    fn handle(
        &mut self,
        msg: Msg,
    ) -> io::Result<Option<(EndReason, crossbeam_channel::Sender<()>)>> {
        let (t, tid, record) = match msg {
            Msg::Alloc {
                t,
                tid,
                func,
                addr,
                size,
                stack,
            } => {
                let stack = self.stack_id(stack);
                if self.cfg.placement_bytes > 0 && size >= self.cfg.placement_bytes {
                    self.placements.alloc(addr, size, t);
                }
                let alloc = Alloc {
                    func,
                    addr,
                    size,
                    stack,
                };
                self.out.push_alloc(t, tid, &alloc)?;
                return Ok(None);
            }
            Msg::Free {
                t,
                tid,
                addr,
                realloc,
            } => {
                self.placement_freed(addr, t)?;
                self.out.push_free(t, tid, &Free { addr, realloc })?;
                return Ok(None);
            }
            Msg::ReallocFailed { t, tid, addr } => {
                (t, tid, Record::ReallocFailed(ReallocFailed { addr }))
            }
            Msg::Map {
                t,
                tid,
                func,
                addr,
                len,
                prot,
                flags,
                stack,
            } => {
                let stack = self.stack_id(stack);
                let map = Map {
                    func,
                    addr,
                    len,
                    prot,
                    flags,
                    stack,
                };
                (t, tid, Record::Map(map))
            }
            Msg::Unmap { t, tid, addr, len } => (t, tid, Record::Unmap(Unmap { addr, len })),
            Msg::Stack { hash, frames } => {
                let next = self.stack_ids.len() as u32;
                let entry = self.stack_ids.entry(hash).or_insert((next, false));
                if entry.1 {
                    return Ok(None);
                }
                entry.1 = true;
                let id = entry.0;
                // Kept only for naming them at exit.
                if self.cfg.symbolize {
                    self.addresses.extend(
                        frames
                            .iter()
                            .copied()
                            .filter(|&f| f & memshim_trace::PYTHON_FRAME == 0),
                    );
                }
                let record = match self.brancher.branch(id, &frames) {
                    Some(branch) => Record::StackBranch(branch),
                    None => Record::Stack(StackDef {
                        id,
                        frames: frames.into_vec(),
                    }),
                };
                (clock::monotonic_ns(), 0, record)
            }
            Msg::Stacked(m) => {
                let StackedMsg {
                    t,
                    tid,
                    stack,
                    mut record,
                } = *m;
                if let Some(hash) = stack {
                    let id = self.stack_id(hash);
                    record.set_stack(id);
                }
                self.track_host_placement(&record, t)?;
                (t, tid, record)
            }
            Msg::Record(record) => (clock::monotonic_ns(), 0, record),
            Msg::PyCode(code) => {
                let name = self.py_string(&code.name)?;
                let file = self.py_string(&code.file)?;
                let def = PyCode {
                    id: code.id,
                    name,
                    file,
                    first_line: code.first_line,
                };
                (clock::monotonic_ns(), 0, Record::PyCode(def))
            }
            Msg::Modules(mods) => {
                self.update_modules(mods)?;
                return Ok(None);
            }
            Msg::Shutdown { reason, ack } => return Ok(Some((reason, ack))),
            Msg::Flush(seq) => {
                self.flush()?;
                channel::flushed(seq);
                return Ok(None);
            }
            Msg::SizeLimit { seq, limit } => {
                self.flush()?;
                if self.out.get_mut().before_size_limit(limit) {
                    channel::room_taken();
                }
                channel::flushed(seq);
                return Ok(None);
            }
        };
        self.out.push(&Event { t, tid, record })?;
        Ok(None)
    }

    /// Large pinned and registered host buffers are sampled for placement like large heap blocks:
    /// a pinned buffer on another node than its GPU makes every copy cross the interconnect.
    fn track_host_placement(&mut self, record: &Record, t: u64) -> io::Result<()> {
        use memshim_trace::DeviceMemory::{PinnedHost, Registered};
        let threshold = self.cfg.placement_bytes;
        match record {
            Record::DeviceAlloc(a)
                if threshold > 0
                    && a.size >= threshold
                    && matches!(a.kind, PinnedHost | Registered) =>
            {
                self.placements.alloc(a.addr, a.size, t);
            }
            Record::DeviceFree(f) if matches!(f.kind, PinnedHost | Registered) => {
                self.placement_freed(f.addr, t)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// A large block is being freed: what was found of its pages while it was still being filled goes
    /// out before the free, while the block is live for the reader.
    fn placement_freed(&mut self, addr: u64, t: u64) -> io::Result<()> {
        match self.placements.free(addr) {
            Some(p) => self.out.push(&Event {
                t,
                tid: 0,
                record: Record::Placement(Box::new(p)),
            }),
            None => Ok(()),
        }
    }

    /// The string table id of `text`, writing its definition the first time.
    fn py_string(&mut self, text: &str) -> io::Result<u32> {
        if let Some(&id) = self.py_strings.get(text) {
            return Ok(id);
        }
        let id = self.py_strings.len() as u32;
        self.py_strings.insert(text.into(), id);
        self.out.push(&Event {
            t: clock::monotonic_ns(),
            tid: 0,
            record: Record::PyString(PyString {
                id,
                text: text.into(),
            }),
        })?;
        Ok(id)
    }

    fn stack_id(&mut self, hash: u64) -> u32 {
        if hash == crate::record::recorder::UNSAMPLED_HASH {
            return memshim_trace::UNSAMPLED;
        }
        let next = self.stack_ids.len() as u32;
        self.stack_ids.entry(hash).or_insert((next, false)).0
    }

    /// Writes loads and unloads between the known map and `mods`.
    fn update_modules(&mut self, mods: Vec<Module>) -> io::Result<()> {
        let t = clock::monotonic_ns();
        let now: HashSet<(String, u64)> = mods.iter().map(|m| (m.path.clone(), m.base)).collect();
        let gone: Vec<(String, u64)> = self
            .modules
            .keys()
            .filter(|k| !now.contains(*k))
            .cloned()
            .collect();
        for (path, base) in gone {
            self.modules.remove(&(path.clone(), base));
            let rec = Record::ModuleUnload(ModuleUnload { path, base });
            self.out.push(&Event {
                t,
                tid: 0,
                record: rec,
            })?;
        }
        for m in mods {
            let key = (m.path.clone(), m.base);
            if self.modules.insert(key, ()).is_none() {
                self.out.push(&Event {
                    t,
                    tid: 0,
                    record: Record::ModuleLoad(Box::new(m)),
                })?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let now = clock::monotonic_ns();
        for p in self.placements.sample(now) {
            self.out.push(&Event {
                t: now,
                tid: 0,
                record: Record::Placement(Box::new(p)),
            })?;
        }
        let dropped = channel::dropped();
        if dropped != self.dropped_written {
            self.dropped_written = dropped;
            self.out.push(&Event {
                t: clock::monotonic_ns(),
                tid: 0,
                record: Record::Dropped(dropped),
            })?;
        }
        if !self.unwinder_noted && crate::record::unwind::lost() {
            self.unwinder_noted = true;
            self.out.push(&Event {
                t: now,
                tid: 0,
                record: Record::Note(memshim_trace::Note {
                    text: UNWINDER_LOST_NOTE.into(),
                }),
            })?;
        }
        self.out.flush_frame()?;
        let waiting = self.out.get_ref().has_waiting();
        self.out.store_frees_by_address(waiting);
        Ok(())
    }
}
