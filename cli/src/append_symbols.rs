//! Right after `memshim run`'s command ends (and `memshim attach` detaches), names every stack address of its traces and appends the
//! names to each trace as a Symbols frame, while the binaries and libraries are surely still there
//! (a test binary in a temporary directory may be gone by the time someone reports). The shim can do
//! this in-process at exit, but that costs the traced program a fifth of a second per process (a
//! Python interpreter's DWARF); `memshim run` turns it off there and does it here instead.
//!
//! Never: touch a trace that is not whole. A trace whose last frame is torn or which has a corrupt
//! frame is left exactly as it is (the report symbolizes it offline, as before). The one thing cut
//! from a trace is the zeros after its last frame that a process left when it died with room set
//! aside past a file-size limit, once every one of them is read to be zero.
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use memshim_trace::{Event, Note, Record, SymFrame, Symbol, TraceWriter};

use crate::replay;
use crate::symbol_cache::DiskCache;
use crate::symbolize::Symbolizer;

/// What appending found.
pub struct Appended {
    /// Addresses named.
    pub named: usize,
    /// True when the trace is whole (it has its end) and defines no stack: no allocation, mapping
    /// or CUDA call was recorded at all.
    pub recorded_nothing: bool,
}

/// Who added the symbols, and when, as the trace's note says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddedBy {
    /// `memshim run`, once its command ended.
    Run,
    /// `memshim attach`, once it detached.
    Detach,
    /// `memshim attach`, once the process it was attached to ended.
    AttachedEnd,
}

impl AddedBy {
    fn note(self) -> &'static str {
        match self {
            AddedBy::Run => "symbols were added by memshim run right after the process ended",
            AddedBy::Detach => "symbols were added by memshim attach right after it detached",
            AddedBy::AttachedEnd => {
                "symbols were added by memshim attach right after the process ended"
            }
        }
    }
}

/// Appends symbols for the addresses the trace does not name yet, with a note saying `by` whom.
/// `disk` is the on-disk cache of names, shared by the traces of one run: a job's processes load
/// the same libraries (the workers of a PyTorch job each load libtorch, whose cache is 150,000
/// addresses), read from disk once for all of them.
pub fn append(path: &Path, by: AddedBy, disk: &mut DiskCache) -> Result<Appended> {
    let t = replay::replay_with(path, replay::Detail::Symbols)?;
    if t.still_writing {
        // Its process is still writing it (a daemon that outlived the command): frames added
        // now would interleave with the ones it has yet to write, and tear the trace. The report
        // names its frames from the files on disk instead.
        return Ok(Appended {
            named: 0,
            recorded_nothing: false,
        });
    }
    let mut size = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if t.unwritten_tail && t.corrupt.is_none() && trim_unwritten(path, t.complete_bytes)? {
        size = t.complete_bytes;
    }
    let done = |named| Appended {
        named,
        recorded_nothing: t.stacks.is_empty() && t.end.is_some() && !t.truncated,
    };
    let Some(at) = t.resume else {
        return Ok(done(0));
    };
    if t.corrupt.is_some() || t.complete_bytes != size {
        return Ok(done(0));
    }
    // Each place in the stack tree once (a PyTorch job's million stacks are 87 million frames, 7
    // million places), each address once, in order.
    let mut addrs: Vec<u64> = t
        .stacks
        .node_frames()
        .filter(|&a| a & memshim_trace::PYTHON_FRAME == 0)
        .collect::<rustc_hash::FxHashSet<u64>>()
        .into_iter()
        .filter(|a| !t.symbols.contains_key(a))
        .collect();
    addrs.sort_unstable();
    let mut sym = Symbolizer::with_disk(std::mem::take(disk));
    let symbols: Vec<Symbol> = addrs
        .into_iter()
        .filter_map(|addr| {
            let names = sym.names(&t, addr);
            names.iter().any(|f| f.function.is_some()).then(|| Symbol {
                addr,
                frames: names
                    .into_iter()
                    .map(|f| SymFrame {
                        function: f.function,
                        file: f.file,
                        line: f.line.unwrap_or(0),
                    })
                    .collect(),
            })
        })
        .collect();
    sym.save_cache();
    *disk = sym.into_disk();
    if symbols.is_empty() {
        return Ok(done(0));
    }
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {} to add symbols", path.display()))?;
    let written = write_symbols(&file, at, t.last_t, &symbols, by);
    if let Err(e) = written {
        // A frame cut short (a full disk, a file-size limit) would end the trace torn: the trace
        // is given back exactly as it was, and the report names its frames offline.
        file.set_len(size)
            .with_context(|| format!("cannot cut {} back after: {e:#}", path.display()))?;
        return Err(e).with_context(|| format!("cannot add symbols to {}", path.display()));
    }
    Ok(done(symbols.len()))
}

/// Appends `symbols` and the note saying `by` whom to `file`, after its last frame.
fn write_symbols(
    mut file: &std::fs::File,
    at: memshim_trace::Resume,
    t: u64,
    symbols: &[Symbol],
    by: AddedBy,
) -> Result<()> {
    file.seek(SeekFrom::End(0))?;
    let mut w = TraceWriter::append(file, Some(3), at)?;
    let at = |record| Event { t, tid: 0, record };
    for chunk in symbols.chunks(4096) {
        w.push(&at(Record::Symbols(chunk.to_vec())))?;
    }
    w.push(&at(Record::Note(Note {
        text: by.note().into(),
    })))?;
    w.finish()?;
    Ok(())
}

/// Cuts the trace at `end` when every byte after it is zero (room the shim set aside and never
/// wrote, see `memshim_trace::TraceReader::unwritten_tail`); false, and the file as it was, when
/// any is not.
fn trim_unwritten(path: &Path, end: u64) -> Result<bool> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {} to cut its unwritten end", path.display()))?;
    // Only what may hold data is read: the room is a hole where the file system keeps them.
    let ranges = crate::file_holes::data_ranges(&file, end)
        .with_context(|| format!("cannot find the data in {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    for (start, stop) in ranges {
        file.seek(SeekFrom::Start(start))
            .with_context(|| format!("cannot seek in {}", path.display()))?;
        let mut left = stop - start;
        while left > 0 {
            let want = left.min(buf.len() as u64) as usize;
            let n = file
                .read(&mut buf[..want])
                .with_context(|| format!("cannot read {}", path.display()))?;
            if n == 0 {
                break;
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            left -= n as u64;
        }
    }
    file.set_len(end)
        .with_context(|| format!("cannot cut the unwritten end of {}", path.display()))?;
    Ok(true)
}
