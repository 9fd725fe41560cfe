//! Replays one trace file through the analyses, keeping what the report needs: the header, how the
//! trace ended, stacks, modules and symbols. Memory stays bounded by the live set and the number of
//! distinct stacks, whatever the file's size.
use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memshim_trace::{End, Header, Module, Record, SymFrame, TraceReader};

use crate::analysis::{device::Device, heap::Heap, mmap::Mappings, transfers::Transfers};

/// A module as loaded, with when it was loaded and unloaded.
#[derive(Clone, Debug)]
pub struct LoadedModule {
    /// What the shim recorded.
    pub module: Module,
    /// When it was unloaded, if it was.
    pub unloaded_t: Option<u64>,
}

/// Everything one trace says, analysed.
#[derive(Debug)]
pub struct Replayed {
    /// The trace file.
    pub path: PathBuf,
    /// The process header.
    pub header: Header,
    /// The orderly end, if the trace has one.
    pub end: Option<End>,
    /// True when the trace ends without its End record or with a torn frame.
    pub truncated: bool,
    /// Why reading stopped early, when a frame was corrupt.
    pub corrupt: Option<String>,
    /// Events the shim could not record.
    pub dropped: u64,
    /// The shim's notes.
    pub notes: Vec<String>,
    /// Time of the last event (clock ns).
    pub last_t: u64,
    /// Events by record kind.
    pub counts: HashMap<&'static str, u64>,
    /// Stack frames by id.
    pub stacks: HashMap<u32, Vec<u64>>,
    /// Loaded modules, in load order.
    pub modules: Vec<LoadedModule>,
    /// In-process symbols by return address.
    pub symbols: HashMap<u64, Vec<SymFrame>>,
    /// The heap analysis.
    pub heap: Heap,
    /// The mapping analysis.
    pub mmap: Mappings,
    /// The CUDA memory analysis.
    pub device: Device,
    /// The copies.
    pub transfers: Transfers,
}

/// The name of a record kind, for counts.
pub fn kind_name(r: &Record) -> &'static str {
    match r {
        Record::Alloc(_) => "alloc",
        Record::Free(_) => "free",
        Record::ReallocFailed(_) => "realloc_failed",
        Record::Map(_) => "map",
        Record::Unmap(_) => "unmap",
        Record::Stack(_) => "stack",
        Record::ModuleLoad(_) => "module_load",
        Record::ModuleUnload(_) => "module_unload",
        Record::Symbols(_) => "symbols",
        Record::Dropped(_) => "dropped",
        Record::Note(_) => "note",
        Record::End(_) => "end",
        Record::DeviceAlloc(_) => "device_alloc",
        Record::DeviceFree(_) => "device_free",
        Record::CudaFailure(_) => "cuda_failure",
        Record::MemInfo(_) => "mem_info",
        Record::ManagedHint(_) => "managed_hint",
        Record::Copy(_) => "copy",
    }
}

/// Reads and analyses the trace at `path`. A corrupt frame stops the replay but keeps what came
/// before it (marked truncated, with the reason in `corrupt`); an unreadable header is an error.
pub fn replay(path: &Path) -> Result<Replayed> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = TraceReader::new(BufReader::with_capacity(1 << 20, file))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut r = Replayed {
        path: path.to_path_buf(),
        header: reader.header().clone(),
        end: None,
        truncated: false,
        corrupt: None,
        dropped: 0,
        notes: Vec::new(),
        last_t: reader.header().clock_start_ns,
        counts: HashMap::new(),
        stacks: HashMap::new(),
        modules: Vec::new(),
        symbols: HashMap::new(),
        heap: Heap::default(),
        mmap: Mappings::default(),
        device: Device::default(),
        transfers: Transfers::default(),
    };
    loop {
        let ev = match reader.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e @ memshim_trace::Error::CorruptFrame { .. }) => {
                r.corrupt = Some(e.to_string());
                break;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        *r.counts.entry(kind_name(&ev.record)).or_default() += 1;
        if ev.tid != 0 {
            r.last_t = r.last_t.max(ev.t);
        }
        match ev.record {
            Record::Alloc(a) => r.heap.alloc(ev.t, ev.tid, a.addr, a.size, a.stack),
            Record::Free(f) => {
                r.heap.free(ev.t, ev.tid, f.addr, f.realloc);
            }
            Record::ReallocFailed(f) => r.heap.realloc_failed(ev.tid, f.addr),
            Record::Map(m) => r.mmap.map(ev.tid, &m),
            Record::Unmap(u) => r.mmap.unmap(ev.tid, &u),
            Record::Stack(s) => {
                r.stacks.insert(s.id, s.frames);
            }
            Record::ModuleLoad(m) => r.modules.push(LoadedModule {
                module: m,
                unloaded_t: None,
            }),
            Record::ModuleUnload(u) => {
                if let Some(m) = r.modules.iter_mut().rev().find(|m| {
                    m.unloaded_t.is_none() && m.module.path == u.path && m.module.base == u.base
                }) {
                    m.unloaded_t = Some(ev.t);
                }
            }
            Record::Symbols(syms) => {
                for s in syms {
                    r.symbols.insert(s.addr, s.frames);
                }
            }
            Record::Dropped(n) => r.dropped = r.dropped.max(n),
            Record::Note(n) => r.notes.push(n.text),
            Record::End(e) => {
                r.dropped = r.dropped.max(e.dropped_events);
                r.end = Some(e);
            }
            Record::DeviceAlloc(a) => r.device.alloc(ev.t, ev.tid, &a),
            Record::DeviceFree(f) => r.device.free(ev.t, ev.tid, &f),
            Record::CudaFailure(f) => r.device.failure(ev.t, ev.tid, f),
            Record::MemInfo(m) => r.device.mem_info(&m),
            Record::ManagedHint(h) => r.device.hint(&h),
            Record::Copy(c) => r.transfers.copy(&c, &r.device, &r.heap),
        }
    }
    r.truncated = reader.truncated() || r.corrupt.is_some();
    Ok(r)
}
