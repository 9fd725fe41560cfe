//! Python frames lent to a thread that runs none: a native thread working for Python code (PyTorch's
//! autograd engine during `loss.backward()`, which allocates the gradients' device memory; a
//! communication thread) gets the frames of the interpreter's main thread, marked as lent.
//!
//! For CUDA, NUMA and PyTorch allocator calls, rarer than heap calls: the main thread may be running
//! while it is read, so every read goes through the kernel (`Checked`: a freed frame gives an error,
//! never a fault), a chunk at a time (`Chunked`: a frame's and its code object's words cost a few
//! system calls, not one each), and no CPython function is called. Lines come from decoding the code
//! object's line table here (3.11+); before 3.11 a lent frame gets its function's first line.
use super::codes;
use super::layout::{Layout, BYTES_DATA, BYTES_SIZE, OB_TYPE, TSTATE_NEXT};
use super::linetable::line_at;
use super::memory::{Checked, Chunked, Heads, Memory};
use super::runtime::Runtime;
use super::walk::{chain, Step, MAX_PY_FRAMES};
use memshim_trace::FrameRef;

/// Most threads followed to find the main one.
const MAX_THREADS: usize = 4096;
/// Longest line table read.
const MAX_TABLE: usize = 4096;

/// Writes the main thread's Python frames into `out` (innermost first) unless `own` is the main
/// thread; returns how many. The chain is followed first and then every code object on it is read
/// in one system call: about one read a code object before, 11 a PyTorch backward's stack.
pub fn main_thread_frames(rt: &Runtime, own: usize, out: &mut [u64; MAX_PY_FRAMES]) -> usize {
    let chunks = Chunked::new();
    let Some(main) = main_thread(rt, &chunks) else {
        return 0;
    };
    if main == own {
        return 0;
    }
    let l = rt.layout;
    let mut chain_frames = [(0usize, 0usize); MAX_PY_FRAMES];
    let mut len = 0;
    // A chain cut short keeps the frames read so far.
    let _ = chain(&chunks, l, main, |step| {
        if let Step::Frame { frame, code } = step {
            chain_frames[len] = (frame, code);
            len += 1;
        }
        len < MAX_PY_FRAMES
    });
    let chain_frames = &chain_frames[..len];
    let mem = Heads::read(&chunks, chain_frames.iter().map(|&(_, code)| code));
    let mut n = 0;
    for &(frame, code) in chain_frames {
        // What `walk` checks: anything but a code object ends the frames.
        if mem.word(code + OB_TYPE) != Some(rt.code_type) {
            break;
        }
        let fp = codes::fingerprint(&mem, l, code);
        let line = lent_line(&mem, l, frame, code, fp);
        if line == u32::MAX {
            // 3.13's `__init__` shim, which has no line (its first line is -1).
            continue;
        }
        let id = codes::id_with(&mem, l, rt.unicode_type, code, fp);
        out[n] = FrameRef::python_lent(id, line);
        n += 1;
    }
    n
}

/// The interpreter's main thread: the oldest thread state (new ones go to the head of the list).
fn main_thread(rt: &Runtime, mem: &Chunked) -> Option<usize> {
    let mut t = rt.thread_head()?;
    for _ in 0..MAX_THREADS {
        match mem.word(t + TSTATE_NEXT)? {
            0 => return Some(t),
            next => t = next,
        }
    }
    None
}

/// The line a frame of another thread is on, read with checked reads only. From 3.11 on, an exact
/// line is kept in the table the thread's own frames use (keyed alike: the instruction pointer and
/// the code object's fingerprint `fp`), so a frame met again is not decoded again: the autograd
/// thread meets the same few main-thread frames for every gradient of a backward pass.
fn lent_line(mem: &Heads, l: &Layout, frame: usize, code: usize, fp: u32) -> u32 {
    let first = mem.u32(code + l.code_firstlineno).unwrap_or(0);
    let exact = || -> Option<u32> {
        let instr = mem.word(frame + l.frame_instr()?)?;
        if let Some(line) = codes::cached_line(instr as u64, fp) {
            return Some(line);
        }
        let unit = instr.checked_sub(code + l.code_adaptive?)? / 2;
        let table = mem.word(code + l.code_linetable?)?;
        let len = mem.word(table + BYTES_SIZE)?.min(MAX_TABLE);
        let mut buf = [0u8; MAX_TABLE];
        if !Checked.read_into(table + BYTES_DATA, &mut buf[..len]) {
            return None;
        }
        let line = u32::try_from(line_at(&buf[..len], first as i32, unit)?).ok()?;
        codes::remember_line(instr as u64, fp, line);
        Some(line)
    };
    exact().unwrap_or(first)
}
