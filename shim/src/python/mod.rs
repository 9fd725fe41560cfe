//! Python frames in native stacks: when the process runs CPython 3.9 to 3.14, every captured stack
//! gets the calling thread's Python frames (function, file, line) merged in where the interpreter's
//! `_PyEval_EvalFrameDefault` frames stand; native frames above and below stay.
//!
//! What is read, for which versions: `layout` lists the offsets (thread state, frame chain, code
//! object, compact `str`); `walk` the chain; `codes` the names of code objects. Lines come from
//! CPython's own pure functions (`PyCode_Addr2Line`, and `PyUnstable_InterpreterFrame_GetLine`
//! from 3.12).
//!
//! Why it is safe without the GIL: a thread only reads its own frame chain, found through
//! `PyGILState_GetThisThreadState` (its thread-specific slot, not "the thread holding the GIL"),
//! and only while it is inside an allocation or CUDA call, when it is not running bytecode: nothing
//! else pushes or pops its frames, and each frame holds a reference to its code object. While the
//! interpreter is finalizing (when other threads' states are freed) no frames are read.
//!
//! Why a wrong layout cannot crash the program: before the first direct read, the layout is checked
//! once against a live frame chain with reads that fail instead of faulting (`process_vm_readv`):
//! every code object must be a `PyCode_Type` with `str` names (from 3.14, the interpreter's own
//! debug offsets must first agree with the layout, see `debug_offsets`). A version it does not
//! know, a debug or free-threaded build, or a failed check leaves stacks native-only, and the trace
//! says why (a `Python` record, shown by the report).
//!
//! Never: take the GIL, call anything that allocates, counts references or runs Python code.
mod borrow;
mod codes;
mod debug_offsets;
mod layout;
#[cfg(test)]
mod layout_probe;
mod linetable;
mod memory;
mod runtime;
mod walk;

use std::sync::atomic::{AtomicU8, Ordering};

use memshim_trace::{FrameRef, Module, PythonRuntime};
use std::sync::OnceLock;

use memory::{Checked, Direct, Memory};
use runtime::{Found, Runtime};
use walk::{walk, Step};

pub use walk::MAX_PY_FRAMES;

const ABSENT: u8 = 0;
const UNVERIFIED: u8 = 1;
const VERIFYING: u8 = 2;
const ON: u8 = 3;
const OFF: u8 = 4;

static STATE: AtomicU8 = AtomicU8::new(ABSENT);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();
/// What the trace was last told about the interpreter, for a fork child's new trace.
static DESCRIBED: std::sync::Mutex<Option<PythonRuntime>> = std::sync::Mutex::new(None);

fn describe(p: PythonRuntime) -> Option<PythonRuntime> {
    if let Ok(mut d) = DESCRIBED.try_lock() {
        *d = Some(p.clone());
    }
    Some(p)
}

/// The interpreter as last described, for a new trace (a fork child's). Never waits: a lock held
/// by a thread that did not survive the fork gives `None`.
pub fn described() -> Option<PythonRuntime> {
    DESCRIBED.try_lock().ok().and_then(|d| d.clone())
}

/// Looks for CPython in `modules` (and the global scope) once it is not found yet; returns what to
/// record when it is found now. `enabled` is false when `MEMSHIM_PYTHON=0`.
pub fn detect(modules: &[Module], enabled: bool) -> Option<PythonRuntime> {
    if STATE.load(Ordering::Acquire) != ABSENT {
        return None;
    }
    match runtime::find(modules) {
        Found::Nothing => None,
        Found::Unsupported(version, reason) => {
            STATE.store(OFF, Ordering::Release);
            describe(PythonRuntime {
                version,
                frames: false,
                reason,
            })
        }
        Found::Supported(rt) => {
            let version = rt.version.clone();
            if !enabled {
                STATE.store(OFF, Ordering::Release);
                return describe(PythonRuntime {
                    version,
                    frames: false,
                    reason: "turned off with MEMSHIM_PYTHON=0".into(),
                });
            }
            if RUNTIME.set(rt).is_err() {
                return None;
            }
            STATE.store(UNVERIFIED, Ordering::Release);
            describe(PythonRuntime {
                version,
                frames: true,
                reason: String::new(),
            })
        }
    }
}

/// True once the CPython interpreter the process runs has begun to shut down (false without one).
pub fn finalizing() -> bool {
    RUNTIME.get().is_some_and(|rt| rt.finalizing())
}

/// A fork child names code objects again in its own trace.
pub fn after_fork() {
    codes::forget();
}

/// False when [`merge`] adds nothing for certain: no interpreter was found, or its frames are off. A
/// capture then needs no room for Python frames.
#[inline]
pub fn may_merge() -> bool {
    !matches!(STATE.load(Ordering::Acquire), ABSENT | OFF)
}

/// Merges the calling thread's Python frames into `frames[..len]` (native return addresses,
/// innermost first); returns the new length. `frames` has room for [`MAX_PY_FRAMES`] more. With
/// `lend`, a thread without Python frames of its own gets the main thread's (see `borrow`).
#[inline]
pub fn merge(frames: &mut [u64], len: usize, lend: bool) -> usize {
    let state = STATE.load(Ordering::Acquire);
    if state != ON && !(state == UNVERIFIED && verify()) {
        return len;
    }
    merge_python(frames, len, lend)
}

/// The work of [`merge`], out of line so that a program without Python never reserves its buffers
/// (about 4 KiB) on the stack of the thread that allocates.
#[inline(never)]
fn merge_python(frames: &mut [u64], len: usize, lend: bool) -> usize {
    let Some(rt) = RUNTIME.get() else { return len };
    let tstate = rt.thread_state();
    let mut py = [0u64; MAX_PY_FRAMES];
    let mut ends = [0u8; MAX_PY_FRAMES];
    let (mut n, mut segments) = (0usize, 0usize);
    let l = rt.layout;
    if tstate != 0 {
        // A walk cut short keeps the frames read so far.
        let _ = walk(&Direct, l, rt.code_type, tstate, |step| {
            match step {
                Step::Frame { frame, code } => {
                    let fp = codes::fingerprint(&Direct, l, code);
                    let Some(line) = frame_line(rt, frame, code, fp) else {
                        return true;
                    };
                    let id = codes::id_with(&Direct, l, rt.unicode_type, code, fp);
                    py[n] = FrameRef::python(id, line);
                    n += 1;
                }
                Step::Boundary => {
                    ends[segments] = n as u8;
                    segments += 1;
                }
            }
            n < MAX_PY_FRAMES && segments < MAX_PY_FRAMES
        });
    }
    if n == 0 && lend {
        // Below the native frames: they ran on this thread, not under the lent frames.
        n = borrow::main_thread_frames(rt, tstate, &mut py);
        segments = 0;
    }
    if n == 0 {
        return len;
    }
    // Each `_PyEval_EvalFrameDefault` return address, innermost first, gets the frames its
    // invocation ran just above it; frames left over (a native stack cut short, or an unknown
    // evaluator) go below the native ones.
    let mut merged = [0u64; crate::config::MAX_STACK_DEPTH + MAX_PY_FRAMES];
    let (mut out, mut start, mut seg) = (0usize, 0usize, 0usize);
    for &ip in &frames[..len] {
        if seg < segments && rt.in_eval(ip) {
            let end = usize::from(ends[seg]);
            merged[out..out + end - start].copy_from_slice(&py[start..end]);
            out += end - start;
            start = end;
            seg += 1;
        }
        merged[out] = ip;
        out += 1;
    }
    merged[out..out + n - start].copy_from_slice(&py[start..n]);
    out += n - start;
    let out = out.min(frames.len());
    frames[..out].copy_from_slice(&merged[..out]);
    out
}

/// The line of a frame, cached by its instruction pointer and its code object's fingerprint `fp`;
/// `None` for a frame CPython itself leaves out of tracebacks (3.13's `__init__` shim has no line).
fn frame_line(rt: &Runtime, frame: usize, code: usize, fp: u32) -> Option<u32> {
    let key = match (rt.layout.frame_instr(), rt.layout.line) {
        (Some(instr), _) => Direct.word(frame + instr)? as u64,
        (None, layout::Line::Lasti { offset, .. }) => {
            (code as u64) ^ (u64::from(Direct.u32(frame + offset)?) << 47)
        }
        (None, _) => return None,
    };
    let line = codes::line(key, fp, || rt.line(frame, code, &Direct));
    (line != u32::MAX).then_some(line)
}

/// Checks the layout against the calling thread's live frames with reads that cannot fault; turns
/// Python frames on when every frame checks out, off (with a note) when one does not. Returns true
/// when they are on.
#[cold]
fn verify() -> bool {
    let Some(rt) = RUNTIME.get() else {
        return false;
    };
    let tstate = rt.thread_state();
    if tstate == 0
        || STATE
            .compare_exchange(UNVERIFIED, VERIFYING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    {
        return false;
    }
    let l = rt.layout;
    let mut frames = 0;
    let mut bad_name = false;
    let result = walk(&Checked, l, rt.code_type, tstate, |step| {
        if let Step::Frame { code, .. } = step {
            frames += 1;
            let named = |off| {
                let obj = Checked.word(code + off).unwrap_or(0);
                codes::read_str(&Checked, l, rt.unicode_type, obj).is_some()
            };
            bad_name |= !named(l.code_name) || !named(l.code_filename);
        }
        !bad_name && frames < 16
    });
    let next = match result {
        Ok(()) if !bad_name && frames > 0 => ON,
        Ok(()) if !bad_name => UNVERIFIED,
        _ => OFF,
    };
    STATE.store(next, Ordering::Release);
    if next == OFF {
        let why = match result {
            Err(walk::Bad::Unreadable(a)) => {
                format!("a frame pointed at unreadable memory ({a:#x})")
            }
            Err(walk::Bad::NotCode(a)) => format!("a frame's code ({a:#x}) was not a code object"),
            Ok(()) => "a code object's names were not strings".into(),
        };
        let p = describe(PythonRuntime {
            version: rt.version.clone(),
            frames: false,
            reason: format!(
                "the interpreter's memory does not match the CPython {} layout memshim knows \
                 ({why}): a debug or free-threaded build?",
                rt.version
            ),
        });
        if let Some(p) = p {
            crate::channel::send(crate::record::msg::Msg::Record(
                memshim_trace::Record::Python(p),
            ));
        }
    }
    next == ON
}
