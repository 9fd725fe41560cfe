//! Compiles each torture program once per test binary, into one directory of this test process's,
//! whichever test asks first; tests that need the same program wait for that one compilation.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

/// `examples/torture/` at the workspace root.
pub fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join("torture")
}

/// This test process's own directory, `$TMPDIR/memshim-e2e/torture-<pid>`: two runs of the suite at
/// once (two worktrees, or CI's second pass overlapping a developer's) never share or wipe each
/// other's programs and traces. Directories of runs whose process is gone are removed first.
pub fn run_root() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let parent = std::env::temp_dir().join("memshim-e2e");
        let stale = std::fs::read_dir(&parent).into_iter().flatten().flatten();
        for entry in stale {
            let name = entry.file_name();
            let pid = name.to_str().and_then(|n| n.strip_prefix("torture-"));
            if pid.is_some_and(|p| !Path::new("/proc").join(p).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = parent.join(format!("torture-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .unwrap_or_else(|e| panic!("cannot remove the old {}: {e}", dir.display()));
        }
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        dir
    })
}

/// A fresh directory for one test (with `traces/` in it) under [`run_root`].
pub fn test_dir(name: &str) -> crate::util::TestDir {
    let root = run_root().join(name);
    std::fs::create_dir_all(root.join("traces"))
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", root.display()));
    crate::util::TestDir { root }
}

/// The directory the programs are built into.
pub fn build_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = run_root().join("build");
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        dir
    })
}

/// Builds `examples/torture/<src>` into `<build dir>/<out>` with `flags` (after the source, so that
/// `-l` works), once; later calls with the same `out` return the same path.
pub fn program(src: &str, out: &str, flags: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let cell = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(out.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| compile(src, out, flags)).clone()
}

/// A C program built with `-g -O0 -pthread -ldl`, named after its source.
pub fn c(name: &str) -> PathBuf {
    program(
        &format!("{name}.c"),
        name,
        &["-g", "-O0", "-pthread", "-ldl"],
    )
}

/// A C++ program built like [`c`].
pub fn cxx(name: &str) -> PathBuf {
    program(
        &format!("{name}.cpp"),
        name,
        &["-g", "-O0", "-pthread", "-ldl"],
    )
}

/// A shared library `lib<name>.so` from `<name>.c` or `.cpp`.
pub fn shared_lib(src: &str, name: &str) -> PathBuf {
    program(
        src,
        &format!("lib{name}.so"),
        &["-shared", "-fPIC", "-g", "-O0"],
    )
}

/// A Go program that calls C (cgo), built with `go build`.
pub fn go(name: &str) -> PathBuf {
    program(&format!("{name}.go"), name, &[])
}

fn compile(src: &str, out: &str, flags: &[&str]) -> PathBuf {
    if src.ends_with(".go") {
        return compile_go(src, out);
    }
    let (var, default) = if src.ends_with(".cpp") {
        ("CXX", "c++")
    } else if src.ends_with(".rs") {
        ("RUSTC", "rustc")
    } else {
        ("CC", "cc")
    };
    let compiler = std::env::var(var).unwrap_or_else(|_| default.to_string());
    let mut words = compiler.split_whitespace();
    let prog = words.next().unwrap_or(default);
    let out_path = build_dir().join(out);
    if let Some(parent) = out_path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    let src_path = sources().join(src);
    let mut cmd = Command::new(prog);
    cmd.args(words)
        .arg(&src_path)
        .arg("-o")
        .arg(&out_path)
        .args(flags)
        .current_dir(build_dir());
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start the compiler `{prog}` ({var}): {e}"));
    assert!(
        output.status.success(),
        "compiling {} failed ({cmd:?}):\n{}",
        src_path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    out_path
}

/// `go build` of one file outside any module, with its caches in the build directory (CI's home
/// may not be writable, and nothing is fetched).
fn compile_go(src: &str, out: &str) -> PathBuf {
    let out_path = build_dir().join(out);
    let src_path = sources().join(src);
    let mut cmd = Command::new("go");
    cmd.args(["build", "-o"])
        .arg(&out_path)
        .arg(&src_path)
        .env("GOCACHE", build_dir().join("go-cache"))
        .env("GOPATH", build_dir().join("go-path"))
        .env("GO111MODULE", "off")
        .env("CGO_ENABLED", "1")
        .current_dir(build_dir());
    let output = cmd.output().unwrap_or_else(|e| {
        panic!("cannot start `go` (the Go toolchain; .ci/run installs golang-go): {e}")
    });
    assert!(
        output.status.success(),
        "building {} failed ({cmd:?}):\n{}",
        src_path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    out_path
}
