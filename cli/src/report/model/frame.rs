//! One frame of a stack as the model holds it, and how the reports read one: which frames of a stack
//! they show (see `report::frame_marks`, which marks the others), a frame's place and file name as
//! they print them, and whether it is the allocator's own.
use serde::Serialize;

/// A frame's text: shared, since a report holds each address's frames once per stack that passes
/// through it (a PyTorch job's report, ten thousand sites of 150 frames, cloned 180 MB of strings).
pub type Text = std::sync::Arc<str>;

/// One frame.
#[derive(Serialize, Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FrameOut {
    /// "native" (or "python" for interpreter frames).
    pub kind: &'static str,
    pub function: Option<Text>,
    pub file: Option<Text>,
    pub line: Option<u32>,
    pub module: Option<Text>,
    /// The return address, as hex.
    pub address: Text,
    /// Present (true) on a Python frame of the main thread, lent to a native thread that ran no
    /// Python code (PyTorch's autograd engine during `backward()`, say).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub main_thread: bool,
    /// The return address less its module's load bias, as hex (`module+offset` in the reports):
    /// the same in every run, where ASLR moves `address`. Absent for Python frames and addresses in
    /// no known module.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Text>,
    /// Present when the text, Markdown and HTML reports and the exports leave this frame out (see
    /// `report::frame_marks`): "startup" (`_start`, `__libc_start_main`), "import" (Python's import
    /// machinery) or "interpreter" (CPython's own frames around Python code). Never set with
    /// `--all-frames`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<&'static str>,
    /// A Python frame's file as the reports show it: relative to its package's import root or to the
    /// script's directory (`torch/nn/modules/linear.py`); `file` keeps the full path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_file: Option<Text>,
}

/// The frames a report shows: the unmarked ones, or every frame when marking would leave none.
pub fn shown(frames: &[FrameOut]) -> Vec<&FrameOut> {
    shown_by(frames, |_, f| f.hidden.is_some())
}

/// As [`shown`], for frames in another form, `hidden(index, frame)` saying which are marked.
pub fn shown_by<T>(frames: &[T], hidden: impl Fn(usize, &T) -> bool) -> Vec<&T> {
    let shown: Vec<&T> = frames
        .iter()
        .enumerate()
        .filter(|(i, f)| !hidden(*i, f))
        .map(|(_, f)| f)
        .collect();
    if shown.is_empty() {
        frames.iter().collect()
    } else {
        shown
    }
}

/// A frame's place as the reports print it: `module+0xoffset`, the same in every run (the absolute
/// address changes with ASLR); the address itself only when no module holds it.
pub fn place(f: &FrameOut) -> String {
    let module = f
        .module
        .as_deref()
        .map(|m| m.rsplit('/').next().unwrap_or(m));
    match (module, &f.offset) {
        (Some(m), Some(off)) => format!("{m}+{off}"),
        (Some(m), None) => format!("{m} {}", f.address),
        (None, _) => f.address.to_string(),
    }
}

/// A file as the reports print it: a Python frame's short name, else the file's own name.
pub fn file_name(f: &FrameOut) -> Option<&str> {
    f.short_file
        .as_deref()
        .or_else(|| f.file.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p)))
}

/// True for a frame of the allocator itself (malloc, `operator new`, CPython's and PyTorch's allocation
/// wrappers): never the answer to "what called into native code here".
pub fn is_allocator(f: &FrameOut) -> bool {
    const PREFIXES: [&str; 14] = [
        "operator new",
        "malloc",
        "calloc",
        "realloc",
        "posix_memalign",
        "aligned_alloc",
        "_PyObject_",
        "PyObject_Malloc",
        "PyObject_Calloc",
        "PyObject_Realloc",
        "_PyMem_",
        "PyMem_",
        "c10::alloc_cpu",
        "std::__new_allocator",
    ];
    f.function.as_deref().is_some_and(|func| {
        PREFIXES
            .iter()
            .chain(&RUST_ALLOC)
            .any(|p| func.starts_with(p))
    }) || rust_std_part(f).is_some_and(|part| part.starts_with("alloc/"))
}

/// Function names of the Rust standard library's allocation paths (`Vec` growing, `Box`,
/// `String`: the `alloc` crate's), the allocator's own as far as a report is concerned, and its
/// allocator shims. By name too, since the standard library ships some of its code without lines.
const RUST_ALLOC: [&str; 5] = [
    "alloc::",
    "<alloc::",
    "__rust_alloc",
    "__rust_realloc",
    "__rdl_",
];
/// The rest of the Rust standard library linked into every program, by name (`std::` is left to
/// the source rule below: C++ has a namespace of that name).
const RUST_CORE: [&str; 2] = ["core::", "<core::"];

/// True for a frame of the Rust standard library, which every Rust program links in: like the C
/// and C++ runtimes, never the program's own code.
pub fn is_rust_std(f: &FrameOut) -> bool {
    rust_std_part(f).is_some()
        || f.function.as_deref().is_some_and(|func| {
            RUST_ALLOC
                .iter()
                .chain(&RUST_CORE)
                .any(|p| func.starts_with(p))
        })
}

/// Where in the Rust standard library a frame's source is (`alloc/src/raw_vec/mod.rs`): the
/// toolchains rustup installs name those sources `/rustc/<commit>/library/...` in the debugging
/// information of every program built with them, and the crates the standard library is built
/// from (`hashbrown` under `HashMap`) `/rust/deps/<crate>/...` (given as `deps/<crate>/...`).
fn rust_std_part(f: &FrameOut) -> Option<&str> {
    let file = f.file.as_deref()?;
    if let Some(dep) = file.strip_prefix("/rust/") {
        return dep.starts_with("deps/").then_some(dep);
    }
    let (_commit, path) = file.strip_prefix("/rustc/")?.split_once('/')?;
    path.strip_prefix("library/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native(function: &str, module: &str) -> FrameOut {
        FrameOut {
            kind: "native",
            function: (!function.is_empty()).then(|| function.into()),
            file: None,
            line: None,
            module: Some(module.into()),
            address: "0x55d0c0de1121".into(),
            main_thread: false,
            offset: Some("0x1121".into()),
            hidden: None,
            short_file: None,
        }
    }

    #[test]
    fn places_are_module_and_offset() {
        assert_eq!(place(&native("", "/tmp/leaky")), "leaky+0x1121");
        let mut f = native("", "/tmp/leaky");
        f.offset = None;
        assert_eq!(place(&f), "leaky 0x55d0c0de1121");
        f.module = None;
        assert_eq!(place(&f), "0x55d0c0de1121");
    }

    #[test]
    fn the_rust_standard_librarys_allocation_paths_are_the_allocators() {
        let at = |function: &str, file: &str| FrameOut {
            file: Some(file.into()),
            ..native(function, "/src/target/release/app")
        };
        let std = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library";
        let grow = at("grow_impl_runtime", &format!("{std}/alloc/src/alloc.rs"));
        assert!(is_allocator(&grow) && is_rust_std(&grow));
        let fold = at(
            "fold<u8>",
            &format!("{std}/core/src/iter/traits/iterator.rs"),
        );
        assert!(!is_allocator(&fold) && is_rust_std(&fold));
        let map = at(
            "do_alloc<alloc::alloc::Global>",
            "/rust/deps/hashbrown-0.16.1/src/raw/alloc.rs",
        );
        assert!(!is_allocator(&map) && is_rust_std(&map));
        let own = at("app::load", "/src/src/load.rs");
        assert!(!is_allocator(&own) && !is_rust_std(&own));
        // Code the standard library ships without lines, by its name.
        let finish = native("<alloc::raw_vec::RawVecInner>::finish_grow", "/src/app");
        assert!(is_allocator(&finish) && is_rust_std(&finish));
        // C++'s namespace std is not Rust's.
        let cxx = at(
            "std::vector<int, std::allocator<int> >::_M_realloc_insert",
            "/usr/include/c++/12/bits/vector.tcc",
        );
        assert!(!is_allocator(&cxx) && !is_rust_std(&cxx));
    }
}
