//! Memory that system code allocates once, for the whole life of the process, by design: not the
//! program's leaks, though it is still live at exit. Three owners:
//! - `c_library`: the C library's one-time buffers, when the innermost frames above the allocator
//!   are the C library's own and one of them is a stream's buffer (`_IO_file_doallocate`: stdout's,
//!   or a stream's the program never closed), locale data (`setlocale`, `_nl_*`, the conversion
//!   tables of `__gconv_*`), the name-service switch (`__nss_*`, `nss_*`) or the dynamic loader
//!   (`_dl_*`: link maps, TLS blocks);
//! - `cxx_runtime`: libstdc++'s own start-up allocations, made by its static initialisers while the
//!   loader runs them (the emergency exception pool of `eh_alloc.cc`);
//! - `go_runtime`: the Go runtime's own memory in a cgo program (its heap arenas, goroutine stacks),
//!   which it maps through `x_cgo_mmap` and keeps for the life of the process: the innermost frame
//!   above the allocator is the runtime's (`x_cgo_*`, `_cgo_*`, `runtime.*`);
//! - `interpreter`: CPython's allocations while it initialises, before the script's first line runs:
//!   any allocation with `Py_InitializeFromConfig`, `Py_PreInitialize*`, `pymain_init`, `pyinit_*`
//!   or `init_interp_main` on its stack (the call chain that initialisation is, whether `python3`
//!   runs a script or a program embeds the interpreter). Memory the script's own imports allocate
//!   is the program's: it runs under `pymain_run_python`, outside that chain;
//! - `rust_runtime`: the Rust standard library's set-up before a Rust program's `main` runs, any
//!   allocation with `std::rt::init` on its stack (the stack-overflow handler's thread records,
//!   the program's arguments). The program's `main` runs under `std::rt::lang_start_internal`,
//!   outside that call.
//!
//! A program's own call into the C library (`strdup`, `fopen`'s stream, `getline`'s line) is still
//! the program's: only the frames between the allocator and the first frame outside the system
//! library decide. This module reads frames only; it never changes a figure.
use super::model::FrameOut;

/// The owner of memory that a system library keeps by design, if the stack is one.
pub fn owner(frames: &[FrameOut]) -> Option<&'static str> {
    owner_by(frames, traits)
}

/// What [`owner`] reads of one frame, on its own: the report keeps it per return address, so that
/// a site's owner is found without reading its frames' names again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traits {
    /// The allocator itself, or libc's entry points to it.
    allocator: bool,
    /// In the C library or the loader, or one of their internal names.
    libc: bool,
    /// One of the C library's internal names that allocate once (see [`is_libc_name`]).
    libc_name: bool,
    cxx: bool,
    /// In the loader, or its call of a library's initialisers.
    loader: bool,
    interpreter_init: bool,
    rust_init: bool,
    go_runtime: bool,
}

/// The [`Traits`] of one frame.
pub fn traits(f: &FrameOut) -> Traits {
    let libc_name = is_libc_name(f);
    Traits {
        allocator: super::model::frame::is_allocator(f) || is_allocation_entry(f),
        libc: libc_name || in_module(f, is_libc_module),
        libc_name,
        cxx: in_module(f, |m| m.starts_with("libstdc++")),
        loader: in_module(f, is_loader_module) || is_loader_init(f),
        interpreter_init: is_interpreter_init(f),
        rust_init: is_rust_runtime_init(f),
        go_runtime: is_go_runtime(f),
    }
}

/// As [`owner`], of frames in any form whose [`Traits`] `traits` gives.
pub fn owner_by<T>(frames: &[T], traits: impl Fn(&T) -> Traits) -> Option<&'static str> {
    let all = || frames.iter().map(&traits);
    let inner: Vec<Traits> = all().skip_while(|t| t.allocator).collect();
    let libc_run = inner.iter().take_while(|t| t.libc).count();
    if inner[..libc_run].iter().any(|t| t.libc_name) {
        return Some("c_library");
    }
    let cxx_run = inner.iter().take_while(|t| t.cxx).count();
    if cxx_run > 0 && inner.get(cxx_run).is_some_and(|t| t.loader) {
        return Some("cxx_runtime");
    }
    if all().any(|t| t.interpreter_init) {
        return Some("interpreter");
    }
    if all().any(|t| t.rust_init) {
        return Some("rust_runtime");
    }
    if inner.first().is_some_and(|t| t.go_runtime) {
        return Some("go_runtime");
    }
    None
}

/// The Rust standard library's set-up call, by its name with or without the crate's hash.
fn is_rust_runtime_init(f: &FrameOut) -> bool {
    f.function
        .as_deref()
        .and_then(|func| func.strip_prefix("std::rt::init"))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::h"))
}

/// A function of the Go runtime or of its C glue (the `runtime/cgo` package).
fn is_go_runtime(f: &FrameOut) -> bool {
    f.function.as_deref().is_some_and(|func| {
        func.starts_with("x_cgo_") || func.starts_with("_cgo_") || func.starts_with("runtime.")
    })
}

/// True for an owner whose memory is kept apart from the program's leaks.
pub fn is_by_design(owner: &str) -> bool {
    matches!(
        owner,
        "c_library" | "cxx_runtime" | "interpreter" | "go_runtime" | "rust_runtime"
    )
}

/// In words, for the reports.
pub fn describe(owner: &str) -> &'static str {
    match owner {
        "c_library" => "the C library",
        "cxx_runtime" => "the C++ runtime (its emergency exception pool)",
        "interpreter" => "the Python interpreter at start-up",
        "go_runtime" => "the Go runtime (its heap and goroutine stacks)",
        "rust_runtime" => "the Rust runtime at start-up",
        _ => "system code",
    }
}

/// libc's internal allocation entry points (`__libc_malloc`, `__GI___libc_malloc`, `_int_malloc`).
fn is_allocation_entry(f: &FrameOut) -> bool {
    f.function.as_deref().is_some_and(|func| {
        (func.starts_with("__libc_")
            && ["malloc", "calloc", "realloc", "memalign"]
                .iter()
                .any(|a| func.ends_with(a)))
            || func.starts_with("__GI___libc_")
            || func.starts_with("_int_")
            || func.starts_with("tcache_")
    })
}

fn is_libc_name(f: &FrameOut) -> bool {
    let Some(func) = f.function.as_deref() else {
        return false;
    };
    // With the C library's debugging information its internal aliases are named: `__GI__IO_…`.
    let func = func.strip_prefix("__GI_").unwrap_or(func);
    const PREFIXES: [&str; 10] = [
        "_IO_file_doallocate",
        // The character-set conversion tables that locale-aware calls load once (`mbstowcs`).
        "__gconv_",
        "__wcsmbs_",
        "setlocale",
        "_nl_",
        "__nss_",
        "nss_",
        "_nss_",
        "_dl_",
        "newlocale",
    ];
    PREFIXES.iter().any(|p| func.starts_with(p))
}

fn is_loader_init(f: &FrameOut) -> bool {
    f.function
        .as_deref()
        .is_some_and(|func| func == "call_init" || func.starts_with("_dl_init"))
}

fn is_interpreter_init(f: &FrameOut) -> bool {
    f.kind == "native"
        && f.function.as_deref().is_some_and(|func| {
            func.starts_with("Py_Initialize")
                || func.starts_with("Py_PreInitialize")
                || func.starts_with("_Py_PreInitialize")
                || func.starts_with("_Py_InitializeMain")
                || func.starts_with("pymain_init")
                || func.starts_with("pyinit_")
                || func.starts_with("init_interp_main")
                || func.starts_with("pycore_init")
        })
}

fn is_libc_module(base: &str) -> bool {
    base.starts_with("libc.so") || base.starts_with("libc-") || is_loader_module(base)
}

fn is_loader_module(base: &str) -> bool {
    base.starts_with("ld-linux") || base.starts_with("ld-") || base.starts_with("ld64")
}

fn in_module(f: &FrameOut, test: impl Fn(&str) -> bool) -> bool {
    f.module
        .as_deref()
        .map(|m| m.rsplit('/').next().unwrap_or(m))
        .is_some_and(test)
}

#[cfg(test)]
#[path = "by_design_tests.rs"]
mod tests;
