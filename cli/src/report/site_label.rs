//! The one-line name of a call site for the verdict and the first screen: its first frame of the
//! program's own code, `function (file:line)`. In a Python process that is the innermost Python
//! frame outside the import machinery and the standard library (else the innermost Python frame);
//! in native code the first named frame that is neither the allocator nor a system library
//! (the C and C++ runtimes, the loader, the interpreter's own library) nor the Rust standard
//! library, which every Rust program links in, nor a crate Cargo fetched (`hashbrown` growing a
//! map is the program's map growing: the program's line is the one to act on).
//!
//! Only names sites; how stacks are printed is the renderers' business.
use super::model::FrameOut;

/// The label of the site with `frames` (innermost first): a named frame's, else an unnamed one's
/// `module+offset`; None when no frame has either.
pub fn label(frames: &[FrameOut]) -> Option<String> {
    // The frames the reports show (see `frame_marks`): an import's allocation is named by the line
    // that imported, not by the import machinery's own frames.
    let shown: Vec<FrameOut> = super::model::frame::shown(frames)
        .into_iter()
        .cloned()
        .collect();
    let frames = &shown[..];
    let python: Vec<&FrameOut> = frames.iter().filter(|f| f.kind == "python").collect();
    let pick = python
        .iter()
        .copied()
        .find(|f| is_user_python(f))
        .or_else(|| python.first().copied())
        .or_else(|| {
            frames.iter().find(|f| {
                f.function.is_some()
                    && !is_allocator_name(f)
                    && !is_system_module(f)
                    && !super::model::frame::is_rust_std(f)
                    && !is_fetched_crate(f)
            })
        })
        .or_else(|| {
            frames
                .iter()
                .find(|f| f.function.is_some() && !is_allocator_name(f))
        });
    let Some(pick) = pick else {
        // No frame has a name (a stripped library): where the first one lies in its module, the
        // same in every run, as the stacks print it. An address alone moves with ASLR: no label.
        return frames
            .iter()
            .find(|f| f.offset.is_some() && !is_allocator_name(f))
            .map(super::model::frame::place);
    };
    let func = pick.function.as_deref().unwrap_or("??");
    Some(match (super::model::frame::file_name(pick), pick.line) {
        // Only the import machinery's frames were captured (a deep stack cut at the depth limit):
        // say what it is without the frozen module's name, which `--all-frames` shows.
        (Some(file), _) if file.starts_with("<frozen") => {
            format!("{func} (Python's import machinery)")
        }
        (Some(file), Some(line)) => format!("{func} ({file}:{line})"),
        _ => func.to_string(),
    })
}

/// Where a site is, for a finding: its first Python frame, else its first frame with a file.
pub fn finding_place(frames: &[FrameOut]) -> String {
    let pick = frames
        .iter()
        .find(|f| f.kind == "python")
        .or_else(|| frames.iter().find(|f| f.file.is_some()));
    match pick {
        Some(f) => format!(
            "{} ({}:{})",
            f.function.as_deref().unwrap_or("?"),
            f.short_file.as_deref().or(f.file.as_deref()).unwrap_or("?"),
            f.line.unwrap_or(0)
        ),
        None => "an unnamed site".to_string(),
    }
}

/// True for a Python frame of the program's own files: not `<frozen importlib...>`, not the
/// standard library (installed packages are the program's).
pub fn is_user_python(f: &FrameOut) -> bool {
    let Some(file) = f.file.as_deref() else {
        return false;
    };
    if file.starts_with('<') {
        return false;
    }
    let stdlib = file.contains("/lib/python3") && !file.contains("-packages/");
    !stdlib
}

/// Allocator entry points and start-up frames: never a site's name.
fn is_allocator_name(f: &FrameOut) -> bool {
    const NAMES: [&str; 12] = [
        "malloc",
        "calloc",
        "realloc",
        "free",
        "posix_memalign",
        "aligned_alloc",
        "memalign",
        "valloc",
        "pvalloc",
        "operator new",
        "mmap",
        "__libc_",
    ];
    let func = f.function.as_deref().unwrap_or("");
    // The process's start-up frames name no site either.
    NAMES.iter().any(|n| func.starts_with(n)) || func.starts_with("_PyObject_") || func == "_start"
}

/// A frame of a crate Cargo fetched for the program: its sources are under Cargo's home
/// (`~/.cargo/registry/src/<index>/hashbrown-0.15.2/src/map.rs`, or `git/checkouts/`).
fn is_fetched_crate(f: &FrameOut) -> bool {
    f.file.as_deref().is_some_and(|file| {
        ["/.cargo/registry/src/", "/.cargo/git/checkouts/"]
            .iter()
            .any(|p| file.contains(p))
    })
}

fn is_system_module(f: &FrameOut) -> bool {
    let Some(m) = f.module.as_deref() else {
        return false;
    };
    let m = base(m);
    [
        "libc.so",
        "libc-",
        "ld-linux",
        "libstdc++",
        "libgcc_s",
        "libpython",
        "libm.so",
    ]
    .iter()
    .any(|p| m.starts_with(p))
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: &'static str, func: &str, file: &str, line: u32, module: &str) -> FrameOut {
        FrameOut {
            kind,
            function: Some(func.into()),
            file: Some(file.into()),
            line: Some(line),
            module: Some(module.into()),
            address: "0x1".into(),
            main_thread: false,
            offset: None,
            hidden: None,
            short_file: None,
        }
    }

    #[test]
    fn names_the_first_frame_of_the_programs_own_code() {
        let c = [
            frame("native", "__strdup", "strdup.c", 42, "/lib/libc.so.6"),
            frame("native", "leak_strdup", "/src/leaky.c", 60, "/src/leaky"),
        ];
        assert_eq!(label(&c).as_deref(), Some("leak_strdup (leaky.c:60)"));
        let py = [
            frame(
                "native",
                "_PyObject_Malloc",
                "obmalloc.c",
                1,
                "/x/libpython3.11.so",
            ),
            frame("python", "_call", "<frozen importlib._bootstrap>", 241, ""),
            frame(
                "python",
                "load",
                "/usr/lib/python3.11/json/__init__.py",
                3,
                "",
            ),
            frame("python", "grow", "/home/u/app/grow.py", 5, ""),
        ];
        assert_eq!(label(&py).as_deref(), Some("grow (grow.py:5)"));
        assert_eq!(
            label(&py[..2]).as_deref(),
            Some("_call (Python's import machinery)")
        );
        assert_eq!(label(&[]), None);
    }

    #[test]
    fn a_rust_programs_site_is_past_the_standard_library() {
        let exe = "/src/target/release/app";
        let std = |func, file: &str, line| {
            frame(
                "native",
                func,
                &format!("/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/{file}"),
                line,
                exe,
            )
        };
        let stack = [
            frame("native", "realloc", "malloc.c", 3, "/lib/libc.so.6"),
            std("grow_impl_runtime", "alloc/src/alloc.rs", 239),
            std("reserve<u8>", "alloc/src/raw_vec/mod.rs", 340),
            std("fold<u8>", "core/src/iter/traits/iterator.rs", 2064),
            frame(
                "native",
                "do_alloc<alloc::alloc::Global>",
                "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hashbrown-0.15.2/src/raw/alloc.rs",
                19,
                exe,
            ),
            frame("native", "app::load", "/src/src/load.rs", 12, exe),
            frame("native", "app::main", "/src/src/main.rs", 3, exe),
        ];
        assert_eq!(label(&stack).as_deref(), Some("app::load (load.rs:12)"));
        // Only the standard library's frames: the first of them still names the site.
        assert_eq!(
            label(&stack[..4]).as_deref(),
            Some("grow_impl_runtime (alloc.rs:239)")
        );
    }

    #[test]
    fn a_stripped_librarys_site_is_named_by_module_and_offset() {
        let unnamed = |offset: Option<&str>| FrameOut {
            function: None,
            file: None,
            offset: offset.map(Into::into),
            module: Some("/usr/lib/x86_64-linux-gnu/liblzma.so.5".into()),
            ..frame("native", "", "", 0, "")
        };
        let stack = [unnamed(Some("0x158f9")), unnamed(Some("0x56c9"))];
        assert_eq!(label(&stack).as_deref(), Some("liblzma.so.5+0x158f9"));
        // Without an offset only the address is known, which changes from run to run.
        assert_eq!(label(&[unnamed(None)]), None);
    }
}
