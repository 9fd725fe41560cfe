//! Finds a CPython interpreter in the process (in the executable, or in a `libpython3.*.so` loaded
//! with it or later) and resolves what the stack walk calls and compares against.
//!
//! Runs at start and from the sampler thread when the module map changes; never on the hot path.
//!
//! # Safety
//! Every function pointer comes from `dlsym` for the CPython export of that name, and is called (if
//! at all) with the C signature every CPython 3 version that `layout` accepts gives it; the ones
//! called take no arguments and only read the runtime's state. `dladdr1` fills plain data owned here.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};

use memshim_trace::Module;

use super::layout::{self, Layout};
use crate::sys::real;

/// `PyGILState_GetThisThreadState`: the calling thread's state, whether or not it holds the GIL.
type ThisThreadState = unsafe extern "C" fn() -> *mut c_void;
/// `Py_IsFinalizing` / `_Py_IsFinalizing`.
type IsFinalizing = unsafe extern "C" fn() -> c_int;
/// `PyCode_Addr2Line(code, byte offset)`.
type Addr2Line = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
/// `PyUnstable_InterpreterFrame_GetLine(frame)`.
type FrameLine = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `PyInterpreterState_Head()`.
type InterpreterHead = unsafe extern "C" fn() -> *mut c_void;
/// `PyInterpreterState_ThreadHead(interp)`.
type ThreadHead = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// A CPython found in the process, with the functions and objects a walk needs.
pub struct Runtime {
    pub version: String,
    pub layout: &'static Layout,
    this_thread_state: ThisThreadState,
    is_finalizing: Option<IsFinalizing>,
    addr2line: Option<Addr2Line>,
    frame_line: Option<FrameLine>,
    threads: Option<(InterpreterHead, ThreadHead)>,
    /// `&PyCode_Type` and `&PyUnicode_Type`.
    pub code_type: usize,
    pub unicode_type: usize,
    /// `_PyEval_EvalFrameDefault`'s code: where its return addresses lie, empty if unknown.
    eval: (u64, u64),
}

/// What looking for an interpreter found.
pub enum Found {
    /// No CPython in the process (yet).
    Nothing,
    /// A CPython whose frames cannot be read, with its version and why.
    Unsupported(String, String),
    Supported(Runtime),
}

/// Looks for CPython's symbols in the global scope and in any loaded `libpython3`.
pub fn find(modules: &[Module]) -> Found {
    let mut handles = vec![libc::RTLD_DEFAULT];
    for m in modules {
        let name = m.path.rsplit('/').next().unwrap_or("");
        if name.starts_with("libpython3") {
            if let Ok(path) = std::ffi::CString::new(m.path.as_str()) {
                // RTLD_NOLOAD only returns an already loaded object
                // (and keeps it loaded, which the function pointers below rely on).
                let h = real::dlopen(&path, libc::RTLD_NOLOAD | libc::RTLD_LAZY);
                if !h.is_null() {
                    handles.push(h);
                }
            }
        }
    }
    for h in handles {
        let found = from_handle(h);
        if !matches!(found, Found::Nothing) {
            return found;
        }
    }
    Found::Nothing
}

fn sym(handle: *mut c_void, name: &CStr) -> usize {
    real::dlsym(handle, name) as usize
}

fn from_handle(h: *mut c_void) -> Found {
    let get_version = sym(h, c"Py_GetVersion");
    let this_thread = sym(h, c"PyGILState_GetThisThreadState");
    if get_version == 0 || this_thread == 0 {
        return Found::Nothing;
    }
    // SAFETY: Py_GetVersion has this signature in every CPython 3 and returns a static string.
    let text = unsafe {
        let f: unsafe extern "C" fn() -> *const c_char = std::mem::transmute(get_version);
        CStr::from_ptr(f()).to_string_lossy().into_owned()
    };
    let Some((major, minor, version)) = layout::parse_version(&text) else {
        return Found::Unsupported(text, "its version could not be read".into());
    };
    let version = version.to_string();
    let layout = match layout::for_minor(minor) {
        Some(l) if major == 3 => l,
        _ => {
            let why = format!(
                "memshim reads the frames of CPython {} only",
                layout::supported()
            );
            return Found::Unsupported(version, why);
        }
    };
    let debug = super::debug_offsets::for_minor(layout.minor);
    if let Some(why) = debug.and_then(|d| self_described(h, layout, d)) {
        return Found::Unsupported(version, why);
    }
    let code_type = sym(h, c"PyCode_Type");
    let unicode_type = sym(h, c"PyUnicode_Type");
    let finalizing = match sym(h, c"Py_IsFinalizing") {
        0 => sym(h, c"_Py_IsFinalizing"),
        f => f,
    };
    let addr2line = sym(h, c"PyCode_Addr2Line");
    let frame_line = sym(h, c"PyUnstable_InterpreterFrame_GetLine");
    let interp_head = sym(h, c"PyInterpreterState_Head");
    let thread_head = sym(h, c"PyInterpreterState_ThreadHead");
    let needs_frame_line = matches!(layout.line, layout::Line::Api { .. });
    if code_type == 0
        || unicode_type == 0
        || addr2line == 0
        || (needs_frame_line && frame_line == 0)
    {
        return Found::Unsupported(version, "the interpreter does not export the symbols memshim reads (PyCode_Type, PyUnicode_Type, PyCode_Addr2Line)".into());
    }
    // SAFETY: each address was returned by dlsym for the function of that name, whose C signature
    // in the versions `layout` accepts is the one transmuted to; none is called here.
    let rt = unsafe {
        Runtime {
            version,
            layout,
            this_thread_state: std::mem::transmute::<usize, ThisThreadState>(this_thread),
            is_finalizing: (finalizing != 0)
                .then(|| std::mem::transmute::<usize, IsFinalizing>(finalizing)),
            addr2line: Some(std::mem::transmute::<usize, Addr2Line>(addr2line)),
            frame_line: (frame_line != 0)
                .then(|| std::mem::transmute::<usize, FrameLine>(frame_line)),
            threads: (interp_head != 0 && thread_head != 0).then(|| {
                (
                    std::mem::transmute::<usize, InterpreterHead>(interp_head),
                    std::mem::transmute::<usize, ThreadHead>(thread_head),
                )
            }),
            code_type,
            unicode_type,
            eval: symbol_range(sym(h, c"_PyEval_EvalFrameDefault")),
        }
    };
    Found::Supported(rt)
}

/// Why frames stay off for a build whose layout the interpreter itself contradicts: a debug build
/// (`Py_REF_DEBUG`, which `Py_DEBUG` implies, exports its reference total), or `_PyRuntime`'s debug
/// offsets disagreeing with `layout` (a free-threaded build says so there). `None` when they agree.
fn self_described(
    h: *mut c_void,
    layout: &Layout,
    d: &super::debug_offsets::DebugOffsets,
) -> Option<String> {
    if sym(h, c"_Py_GetGlobalRefTotal") != 0 || sym(h, c"_Py_NegativeRefcount") != 0 {
        return Some(format!(
            "it is a debug build: memshim reads the frames of CPython 3.{}'s release build only",
            layout.minor
        ));
    }
    let runtime = sym(h, c"_PyRuntime");
    if runtime == 0 {
        return Some(
            "the interpreter does not export _PyRuntime, whose debug offsets memshim checks".into(),
        );
    }
    use super::memory::{Checked, Memory};
    // Checked reads: the words are the interpreter's, but nothing about them is trusted yet.
    let read = |at: usize| Checked.word(runtime + at).map(|w| w as u64);
    d.check(layout, read).err()
}

/// The start and end of the function at `addr`, from its ELF symbol's size.
fn symbol_range(addr: usize) -> (u64, u64) {
    extern "C" {
        fn dladdr1(
            addr: *const c_void,
            info: *mut libc::Dl_info,
            extra: *mut *mut c_void,
            flags: c_int,
        ) -> c_int;
    }
    const RTLD_DL_SYMENT: c_int = 1;
    if addr == 0 {
        return (0, 0);
    }
    // SAFETY: Dl_info is plain data; dladdr1 fills it and points `sym` at the symbol's ELF entry,
    // which lives as long as the object stays loaded.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut sym: *mut c_void = std::ptr::null_mut();
        if dladdr1(addr as *const c_void, &mut info, &mut sym, RTLD_DL_SYMENT) == 0 || sym.is_null()
        {
            return (0, 0);
        }
        let entry = &*(sym as *const libc::Elf64_Sym);
        if info.dli_saddr as usize != addr || entry.st_size == 0 {
            return (0, 0);
        }
        (addr as u64, addr as u64 + entry.st_size)
    }
}

impl Runtime {
    /// The calling thread's interpreter state, or 0 when it has none or the interpreter is
    /// shutting down (when other threads' states are freed under them).
    #[inline]
    pub fn thread_state(&self) -> usize {
        // SAFETY: both functions take no arguments, only read the runtime's state and are safe to
        // call from any thread, with or without the GIL (they are how C code asks "am I Python?").
        unsafe {
            if self.is_finalizing.is_some_and(|f| f() != 0) {
                return 0;
            }
            (self.this_thread_state)() as usize
        }
    }

    /// True once the interpreter has begun to shut down (module globals are being cleared).
    #[inline]
    pub fn finalizing(&self) -> bool {
        // SAFETY: as in `thread_state`: it takes no arguments and only reads the runtime's state.
        self.is_finalizing.is_some_and(|f| unsafe { f() } != 0)
    }

    /// The newest thread state of the main interpreter (0 when none), or `None` while finalizing.
    pub fn thread_head(&self) -> Option<usize> {
        let (interp_head, thread_head) = self.threads?;
        // SAFETY: both only read a pointer: the runtime's first interpreter (static for the life of
        // the process outside finalization, checked first) and that interpreter's first thread.
        unsafe {
            if self.is_finalizing.is_some_and(|f| f() != 0) {
                return None;
            }
            let interp = interp_head();
            if interp.is_null() {
                return None;
            }
            let t = thread_head(interp) as usize;
            (t != 0).then_some(t)
        }
    }

    /// True when `ip` is a return address inside `_PyEval_EvalFrameDefault`.
    #[inline]
    pub fn in_eval(&self, ip: u64) -> bool {
        ip > self.eval.0 && ip <= self.eval.1
    }

    /// The line the frame at `frame`, running `code`, is on (`u32::MAX` for a frame without one).
    pub fn line(&self, frame: usize, code: usize, mem: &impl super::memory::Memory) -> u32 {
        use layout::Line;
        let line = match self.layout.line {
            Line::Lasti { offset, scale } => {
                let lasti = mem.u32(frame + offset).map_or(-1, |v| v as i32);
                self.addr2line(code, lasti.saturating_mul(scale))
            }
            Line::PrevInstr { offset } => {
                let prev = mem.word(frame + offset).unwrap_or(0);
                let code_start = self.layout.code_adaptive.unwrap_or(0);
                let off = prev.wrapping_sub(code + code_start) as isize;
                let off = if (0..1 << 28).contains(&off) { off } else { -1 };
                self.addr2line(code, off as c_int)
            }
            Line::Api { .. } => match self.frame_line {
                // SAFETY: the function reads the frame's code object and instruction pointer and
                // walks the code's line table: no writes, no allocation, no reference counting.
                Some(f) => unsafe { f(frame as *mut c_void) },
                None => -1,
            },
        };
        u32::try_from(line).unwrap_or(u32::MAX)
    }

    fn addr2line(&self, code: usize, offset: c_int) -> c_int {
        match self.addr2line {
            // SAFETY: `code` is a live code object (its type was checked); PyCode_Addr2Line only
            // reads its line table and returns the first line for a negative offset.
            Some(f) => unsafe { f(code as *mut c_void, offset) },
            None => -1,
        }
    }
}
