//! Which frames of a stack the reports show by default, and how a Python file is named in them.
//! The line a user acts on is their own: start-up frames (`_start`, `__libc_start_main`), Python's
//! import machinery and CPython's own frames around Python code only push it down. Frames are
//! marked here, never dropped: JSON keeps every frame with its mark and its full path, and
//! `--all-frames` leaves every frame unmarked.
use std::path::Path;

use super::model::FrameOut;
use crate::replay::Replayed;

/// What marking needs to know about one process.
#[derive(Debug, Default, Clone)]
pub struct FrameContext {
    /// `--all-frames`: mark nothing hidden.
    pub all_frames: bool,
    /// The directory of the Python script the process ran, when it ran one: its files, and the
    /// project's modules beside it, are named relative to it.
    pub script_dir: Option<String>,
}

impl FrameContext {
    /// The context of one replayed trace.
    pub fn of(t: &Replayed) -> FrameContext {
        FrameContext {
            all_frames: t.all_frames,
            script_dir: t
                .script_dir
                .get_or_init(|| {
                    t.python.as_ref()?;
                    script_dir(&t.header.argv, t.py_codes.values().map(|c| &c.file))
                })
                .clone(),
        }
    }
}

/// Marks the frames of one stack (innermost first) and gives its Python frames their short names.
pub fn mark(frames: &mut [FrameOut], cx: &FrameContext) {
    short_names(frames, cx);
    if cx.all_frames {
        return;
    }
    let traits: Vec<Traits> = frames.iter().map(traits).collect();
    mark_by(frames, |i| traits[i], cx);
}

/// The marking half of [`mark`], with each frame's [`Traits`] (by index) already known.
pub fn mark_by(frames: &mut [FrameOut], traits: impl Fn(usize) -> Traits, cx: &FrameContext) {
    if cx.all_frames {
        return;
    }
    let first_python = (0..frames.len()).position(|i| traits(i).python);
    for (i, f) in frames.iter_mut().enumerate() {
        f.hidden = hidden(traits(i), i, first_python);
    }
}

/// Gives the Python frames among `frames` their short file names (see [`short_python_file`]): the
/// part of [`mark`] that needs no other frame of the stack.
pub fn short_names(frames: &mut [FrameOut], cx: &FrameContext) {
    for f in frames.iter_mut().filter(|f| f.kind == "python") {
        f.short_file = f
            .file
            .as_deref()
            .and_then(|file| short_python_file(file, cx.script_dir.as_deref()))
            .map(Into::into);
    }
}

/// What marking reads of one frame, on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traits {
    pub python: bool,
    pub import: bool,
    pub startup: bool,
    pub interpreter: bool,
}

/// The [`Traits`] of one frame.
pub fn traits(f: &FrameOut) -> Traits {
    let python = f.kind == "python";
    Traits {
        python,
        import: python && is_import_machinery(f),
        startup: !python && is_startup(f),
        interpreter: !python && is_interpreter(f),
    }
}

/// The mark of frame `i` of a stack (innermost first) whose innermost Python frame is
/// `first_python`: what [`mark`] sets, for callers that keep frames in their own form.
pub fn hidden(t: Traits, i: usize, first_python: Option<usize>) -> Option<&'static str> {
    if t.python {
        t.import.then_some("import")
    } else if t.startup {
        Some("startup")
    } else if first_python.is_some_and(|p| i > p || t.interpreter) {
        // Outside the innermost Python frame every native frame is the interpreter calling
        // Python (or C code calling back into it): the Python frames say where.
        Some("interpreter")
    } else {
        None
    }
}

fn is_startup(f: &FrameOut) -> bool {
    let Some(func) = f.function.as_deref() else {
        return false;
    };
    let in_libc = f
        .module
        .as_deref()
        .map(|m| m.rsplit('/').next().unwrap_or(m))
        .is_some_and(|m| m.starts_with("libc.so") || m.starts_with("libc-"));
    func == "_start"
        || func.starts_with("__libc_start_main")
        || func == "__libc_start_call_main"
        // A thread's own start-up, above its start routine.
        || in_libc && matches!(func, "start_thread" | "clone" | "clone3" | "__clone" | "__clone3")
}

fn is_import_machinery(f: &FrameOut) -> bool {
    let Some(file) = f.file.as_deref() else {
        return false;
    };
    file.starts_with("<frozen importlib._bootstrap")
        || file == "<frozen zipimport>"
        || [
            "importlib/_bootstrap.py",
            "importlib/_bootstrap_external.py",
            "/zipimport.py",
        ]
        .iter()
        .any(|end| file.ends_with(end))
}

/// CPython's evaluation loop and calling machinery: what runs a Python frame, not what it asked for;
/// and the interpreter's own frames that have no symbol (its static functions in a stripped build),
/// which name nothing a reader could act on.
fn is_interpreter(f: &FrameOut) -> bool {
    let in_interpreter = f
        .module
        .as_deref()
        .map(|m| m.rsplit('/').next().unwrap_or(m))
        .is_some_and(|m| m.starts_with("python3") || m.starts_with("libpython3"));
    if f.function.is_none() && in_interpreter {
        return true;
    }
    const PREFIXES: [&str; 24] = [
        "_PyEval_",
        "PyEval_",
        "_PyFunction_",
        "function_code_fastcall",
        "PyObject_Vectorcall",
        "_PyObject_Vectorcall",
        "_PyObject_Call",
        "PyObject_Call",
        "_PyObject_FastCall",
        "_PyObject_MakeTpCall",
        "_PyVectorcall",
        "PyVectorcall",
        "method_vectorcall",
        "cfunction_vectorcall",
        "cfunction_call",
        "vectorcall_",
        "slot_tp_call",
        "call_function",
        "do_call_core",
        "object_vacall",
        "run_eval_code_obj",
        "run_mod",
        "pyrun_",
        "_PyRun_",
    ];
    f.function
        .as_deref()
        .is_some_and(|func| PREFIXES.iter().any(|p| func.starts_with(p)))
}

/// A Python file relative to its package's import root (`site-packages/torch/nn/x.py` becomes
/// `torch/nn/x.py`, the standard library's `lib/python3.12/json/decoder.py` becomes
/// `json/decoder.py`) or to the script's directory; `None` keeps the full path.
fn short_python_file(file: &str, script_dir: Option<&str>) -> Option<String> {
    if file.starts_with('<') {
        return None;
    }
    for root in ["/site-packages/", "/dist-packages/"] {
        if let Some(at) = file.rfind(root) {
            return Some(file[at + root.len()..].to_string());
        }
    }
    if let Some(dir) = script_dir {
        if let Some(rest) = file.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
            return Some(rest.to_string());
        }
    }
    stdlib_relative(file).map(str::to_string)
}

/// The part of a standard-library path after `lib/pythonX.Y/`.
fn stdlib_relative(file: &str) -> Option<&str> {
    let at = file.find("/lib/python")?;
    let rest = &file[at + "/lib/python".len()..];
    let slash = rest.find('/')?;
    let version = &rest[..slash];
    (version.starts_with(|c: char| c.is_ascii_digit())
        && version.chars().all(|c| c.is_ascii_digit() || c == '.'))
    .then(|| &rest[slash + 1..])
    .filter(|r| !r.is_empty())
}

/// The directory of the script in `argv` (`python3 [options] script.py ...`), made absolute with the
/// code objects' files when the command line named it relatively.
fn script_dir<'a>(argv: &[String], files: impl Iterator<Item = &'a String>) -> Option<String> {
    let script = argv
        .iter()
        .skip(1)
        .take_while(|a| a.as_str() != "-m" && a.as_str() != "-c")
        .find(|a| !a.starts_with('-') && a.ends_with(".py"))?;
    let path = Path::new(script);
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let mut matches = files.map(Path::new).filter(|f| f.ends_with(path));
        matches.next()?.to_path_buf()
    };
    full.parent()
        .map(|d| d.to_string_lossy().into_owned())
        .filter(|d| !d.is_empty() && d != "/")
}

#[cfg(test)]
#[path = "frame_marks_tests.rs"]
mod tests;
