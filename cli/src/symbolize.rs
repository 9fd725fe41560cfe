//! Turns return addresses into frames: from the symbols the shim wrote in-process when it could, else
//! offline from the module map (the object on disk, checked against the recorded build id, read with
//! addr2line: DWARF lines and inlined calls, or the symbol table when there is no DWARF).
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::fs::File;

use addr2line::Loader;
use memshim_trace::FrameRef;
use object::{Object, ReadCache};

use crate::replay::{LoadedModule, Replayed};
use crate::symbol_cache::{Cached, DiskCache};

/// One frame of a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Demangled function name.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// The module the address lies in.
    pub module: Option<String>,
    /// The return address (for a Python frame, the stack entry that encodes it).
    pub address: u64,
    /// The address less its module's load bias: the same in every run, whatever ASLR chose.
    pub offset: Option<u64>,
    /// True for a Python frame (function, file and line of the interpreted code).
    pub python: bool,
    /// True for a Python frame of the main thread, lent to a thread that ran no Python code.
    pub lent: bool,
}

/// Why a module's file cannot be used.
enum Unusable {
    Missing,
    Changed,
    /// Not a regular file: a FIFO, a device, a directory (a hostile or damaged trace names one).
    NotAFile(&'static str),
}

/// Offline symbolizers, one per module file, opened on first use (not at all when the on-disk cache
/// names every address asked of a module).
#[derive(Default)]
pub struct Symbolizer {
    loaders: HashMap<String, Result<Loader, Unusable>>,
    cache: HashMap<u64, Vec<Frame>>,
    disk: DiskCache,
}

impl Symbolizer {
    /// A symbolizer that names from `disk`: the symbol pass after a run shares one on-disk cache
    /// between its traces (see `append_symbols`).
    pub fn with_disk(disk: DiskCache) -> Symbolizer {
        Symbolizer {
            loaders: HashMap::default(),
            cache: HashMap::default(),
            disk,
        }
    }

    /// The on-disk cache, with what this symbolizer added to it.
    pub fn into_disk(self) -> DiskCache {
        self.disk
    }

    /// The frames of one return address of `trace` (inlined calls give several, innermost first).
    pub fn frames(&mut self, trace: &Replayed, addr: u64) -> Vec<Frame> {
        if let Some(f) = self.cache.get(&addr) {
            return f.clone();
        }
        if let FrameRef::Python { code, line, lent } = FrameRef::decode(addr) {
            let f = trace.py_codes.get(&code);
            return vec![Frame {
                function: Some(
                    f.map_or_else(|| format!("<python code {code}>"), |f| f.name.clone()),
                ),
                file: f.map(|f| f.file.clone()),
                line: (line != 0).then_some(line),
                module: None,
                address: addr,
                offset: None,
                python: true,
                lent,
            }];
        }
        let module = find_module(&trace.modules, addr);
        let module_path = module.map(|m| m.module.path.clone());
        let offset = module.map(|m| addr.wrapping_sub(m.module.base));
        let mut frames: Vec<Frame> = match trace.symbols.get(&addr) {
            Some(sym) if !sym.is_empty() => sym
                .iter()
                .map(|s| Frame {
                    function: s.function.as_deref().map(demangle),
                    file: s.file.clone(),
                    line: (s.line != 0).then_some(s.line),
                    module: module_path.clone(),
                    address: addr,
                    offset,
                    python: false,
                    lent: false,
                })
                .collect(),
            _ => match module {
                Some(m) => self.offline(m, addr),
                None => Vec::new(),
            },
        };
        if frames.is_empty() {
            frames.push(Frame {
                function: None,
                file: None,
                line: None,
                module: module_path,
                address: addr,
                offset,
                python: false,
                lent: false,
            });
        }
        self.cache.insert(addr, frames.clone());
        frames
    }

    fn offline(&mut self, m: &LoadedModule, addr: u64) -> Vec<Frame> {
        let frame = |c: Cached| Frame {
            function: c.function,
            file: c.file,
            line: c.line,
            module: Some(m.module.path.clone()),
            address: addr,
            offset: Some(addr.wrapping_sub(m.module.base)),
            python: false,
            lent: false,
        };
        self.named(m, addr).into_iter().map(frame).collect()
    }

    /// What the file of `addr`'s module (or the on-disk cache) names `addr`, for an address the
    /// trace does not name itself: the symbol pass after a run asks only this, for each address
    /// once, so it keeps none of [`Symbolizer::frames`]' per-address frames (a PyTorch job has
    /// 150,000 addresses, each with its strings cloned three times there).
    pub fn names(&mut self, trace: &Replayed, addr: u64) -> Vec<Cached> {
        match find_module(&trace.modules, addr) {
            Some(m) => self.named(m, addr),
            None => Vec::new(),
        }
    }

    fn named(&mut self, m: &LoadedModule, addr: u64) -> Vec<Cached> {
        // A return address points after the call; the call itself is one byte earlier.
        let probe = addr.wrapping_sub(m.module.base).wrapping_sub(1);
        if let Some(hit) = self.disk.get(&m.module.build_id, probe) {
            return hit;
        }
        let path = &m.module.path;
        let loader = self
            .loaders
            .entry(path.clone())
            .or_insert_with(|| open_checked(path, &m.module.build_id));
        let Ok(loader) = loader else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Ok(mut iter) = loader.find_frames(probe) {
            while let Ok(Some(f)) = iter.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok().map(|c| c.into_owned()));
                let (file, line) = match &f.location {
                    Some(l) => (l.file.map(str::to_string), l.line),
                    None => (None, None),
                };
                out.push(Cached {
                    function,
                    file,
                    line,
                });
            }
        }
        if out.iter().all(|f| f.function.is_none()) {
            if let Some(name) = loader.find_symbol(probe) {
                out = vec![Cached {
                    function: Some(demangle(name)),
                    file: None,
                    line: None,
                }];
            }
        }
        self.disk.put(&m.module.build_id, probe, out.clone());
        out
    }

    /// Keeps what was named offline for the next run (see `symbol_cache`).
    pub fn save_cache(&mut self) {
        self.disk.save();
    }
}

/// The module whose segments contain `addr`, preferring the most recently loaded.
fn find_module(modules: &[LoadedModule], addr: u64) -> Option<&LoadedModule> {
    modules.iter().rev().find(|m| {
        m.module
            .segments
            .iter()
            .any(|s| addr >= s.start && addr < s.start.saturating_add(s.len))
    })
}

/// Opens a module's file for symbolization, refusing one whose build id differs from the trace's.
fn open_checked(path: &str, build_id: &[u8]) -> Result<Loader, Unusable> {
    let file = open_regular(path)?;
    if !build_id.is_empty() {
        let cache = ReadCache::new(&file);
        let on_disk = object::File::parse(&cache)
            .ok()
            .and_then(|o| o.build_id().ok().flatten().map(<[u8]>::to_vec));
        if on_disk.as_deref() != Some(build_id) {
            return Err(Unusable::Changed);
        }
        // Distributions ship debugging information apart, found by build id (libc6-dbg,
        // *-dbgsym): it has the full symbol table and the DWARF the stripped library lacks.
        if let Some(debug) = separate_debug_file(build_id) {
            if let Ok(loader) = Loader::new(&debug) {
                return Ok(loader);
            }
        }
    }
    drop(file);
    // The loader opens the path again (it finds split DWARF beside it). A file swapped for a FIFO
    // in between by someone who can write to its directory is the one case not covered.
    Loader::new(path).map_err(|_| Unusable::Missing)
}

/// Opens `path` for reading only if it is a regular, non-empty file. Opened without blocking and
/// checked on the open descriptor, so a FIFO (whose open or read would wait forever for a writer),
/// a device or a directory named by a trace is never read; symbolic links are followed, since
/// libraries are commonly reached through them.
fn open_regular(path: &str) -> Result<File, Unusable> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let kind = |t: std::fs::FileType| {
        if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        }
    };
    let meta = std::fs::metadata(path).map_err(|_| Unusable::Missing)?;
    if !meta.is_file() {
        return Err(Unusable::NotAFile(kind(meta.file_type())));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|_| Unusable::Missing)?;
    let meta = file.metadata().map_err(|_| Unusable::Missing)?;
    if !meta.is_file() {
        return Err(Unusable::NotAFile(kind(meta.file_type())));
    }
    if meta.len() == 0 {
        return Err(Unusable::NotAFile("an empty file"));
    }
    Ok(file)
}

/// `/usr/lib/debug/.build-id/ab/cdef….debug` for build id `abcdef…`, if it exists.
fn separate_debug_file(build_id: &[u8]) -> Option<std::path::PathBuf> {
    let hex = crate::user_files::build_id_hex(build_id);
    if hex.len() < 3 {
        return None;
    }
    let path = std::path::Path::new("/usr/lib/debug/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    path.is_file().then_some(path)
}

/// Demangles C++ and Rust names; others pass through.
pub fn demangle(name: &str) -> String {
    addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned()
}

/// Modules whose files could not be used, with why, for the report's notes.
impl Symbolizer {
    /// Notes about modules that could not be symbolized.
    pub fn problems(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .loaders
            .iter()
            .filter_map(|(p, r)| match r {
                Ok(_) => None,
                Err(Unusable::Missing) => Some(format!(
                    "{p} could not be read, so its frames have no names"
                )),
                Err(Unusable::NotAFile(what)) => Some(format!(
                    "{p} is {what}, not a module's file, so it was not opened and its frames have no names"
                )),
                Err(Unusable::Changed) => Some(format!(
                    "{p} has changed since the trace was recorded (its build id differs), so its frames have no names"
                )),
            })
            .collect();
        v.sort();
        v
    }
}
