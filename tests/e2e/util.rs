//! Shared helpers: find the built artifacts, compile examples, run programs and `memshim`.
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;

use serde_json::Value;

use crate::report::report_json;

/// The built `memshim` binary (its shim library was checked to be next to it).
pub struct Artifacts {
    pub memshim: PathBuf,
}

/// Locates `memshim` and `libmemshim.so` next to the test binary (`target/<profile>/deps/e2e-*`).
pub fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    ARTIFACTS.get_or_init(|| {
        let exe = std::env::current_exe().expect("the path of the running test binary");
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lives in target/<profile>/deps/")
            .to_path_buf();
        let memshim = profile.join("memshim");
        let shim = profile.join("libmemshim.so");
        for p in [&memshim, &shim] {
            assert!(
                p.is_file(),
                "{} is missing: run `cargo build --release --workspace` first \
                 (and run the tests with `cargo test --release -p memshim-e2e`)",
                p.display()
            );
        }
        Artifacts { memshim }
    })
}

/// The examples' sources: `examples/c/` at the workspace root.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join("c")
}

/// A fresh per-test directory under the system temp dir, named after the test.
pub struct TestDir {
    pub root: PathBuf,
}

impl TestDir {
    /// Removes whatever a previous run left and creates the directory (and `traces/` in it).
    pub fn new(test_name: &str) -> TestDir {
        let root = std::env::temp_dir().join("memshim-e2e").join(test_name);
        if root.exists() {
            std::fs::remove_dir_all(&root)
                .unwrap_or_else(|e| panic!("cannot remove the old {}: {e}", root.display()));
        }
        std::fs::create_dir_all(root.join("traces"))
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", root.display()));
        TestDir { root }
    }

    /// Where `memshim run -o` writes.
    pub fn traces(&self) -> PathBuf {
        self.root.join("traces")
    }

    /// A path inside the test directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Compiles `examples/c/<src>` with `-g -O0` into this directory; returns the program's path.
    pub fn compile(&self, src: &str) -> PathBuf {
        let out = Path::new(src)
            .file_stem()
            .expect("a source file name")
            .to_string_lossy()
            .into_owned();
        self.compile_with(src, &out, &["-g", "-O0"])
    }

    /// Compiles `examples/rust/<src>` with `rustc -g -C opt-level=0` (`RUSTC` names another) into
    /// this directory; returns the program's path.
    pub fn compile_rust(&self, src: &str) -> PathBuf {
        let out = self
            .root
            .join(Path::new(src).file_stem().expect("a source file name"));
        let src_path = examples_dir().join("../rust").join(src);
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
        let mut cmd = Command::new(&rustc);
        cmd.args(["-g", "-C", "opt-level=0", "-o"])
            .arg(&out)
            .arg(&src_path);
        compile_ok(&mut cmd, &src_path, &format!("`{rustc}` (RUSTC)"));
        out
    }

    /// Compiles `examples/c/<src>` into `<dir>/<out>` with `flags` (after the source, so `-l` works).
    pub fn compile_with(&self, src: &str, out: &str, flags: &[&str]) -> PathBuf {
        let cxx = src.ends_with(".cpp") || src.ends_with(".cc");
        let (var, default) = if cxx { ("CXX", "c++") } else { ("CC", "cc") };
        let compiler = std::env::var(var).unwrap_or_else(|_| default.to_string());
        let mut words = compiler.split_whitespace();
        let program = words.next().unwrap_or(default);
        let out_path = self.root.join(out);
        let src_path = examples_dir().join(src);
        let mut cmd = Command::new(program);
        cmd.args(words)
            .arg(&src_path)
            .arg("-o")
            .arg(&out_path)
            .args(flags);
        compile_ok(
            &mut cmd,
            &src_path,
            &format!("the compiler `{program}` ({var})"),
        );
        out_path
    }
}

/// Runs the compiler command `cmd` of `src`, `compiler` naming it for a failure to start.
fn compile_ok(cmd: &mut Command, src: &Path, compiler: &str) {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {compiler}: {e}"));
    assert!(
        output.status.success(),
        "compiling {} failed ({cmd:?}):\n{}",
        src.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What a command did.
pub struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: ExitStatus,
    pub what: String,
}

impl Outcome {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// For assertion messages: the command, its status and both outputs.
    pub fn describe(&self) -> String {
        format!(
            "`{}` -> {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.what,
            self.status,
            self.stdout_str(),
            self.stderr_str()
        )
    }
}

pub fn run_command(cmd: &mut Command) -> Outcome {
    hermetic(cmd);
    let what = format!("{cmd:?}");
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    Outcome {
        stdout: output.stdout,
        stderr: output.stderr,
        status: output.status,
        what,
    }
}

/// Keeps a command hermetic: no settings from the caller's environment reach the shim, and names
/// come from the binaries, not from a cache another run left in the home directory.
pub fn hermetic(cmd: &mut Command) {
    for var in [
        "LD_PRELOAD",
        "MEMSHIM_OUTPUT",
        "MEMSHIM_DISABLE",
        "MEMSHIM_HEAP",
        "MEMSHIM_MMAP",
        "MEMSHIM_STACK_DEPTH",
        "MEMSHIM_SYMBOLIZE",
        "MEMSHIM_QUIET",
        "MEMSHIM_PYTHON",
        "MEMSHIM_TORCH",
        "MEMSHIM_CUDA",
        "MEMSHIM_CUPTI_LIB",
        "MEMSHIM_SAMPLE_BYTES",
        "PYTHONMALLOC",
    ] {
        // A variable the test set itself stays.
        if !cmd.get_envs().any(|(k, v)| k == var && v.is_some()) {
            cmd.env_remove(var);
        }
    }
    if !cmd.get_envs().any(|(k, _)| k == "MEMSHIM_SYMBOL_CACHE") {
        cmd.env("MEMSHIM_SYMBOL_CACHE", "off");
    }
}

/// Runs `prog args` directly, in `cwd`.
pub fn run_bare<S: AsRef<OsStr>>(cwd: &Path, prog: &Path, args: &[S]) -> Outcome {
    let mut cmd = Command::new(prog);
    cmd.args(args).current_dir(cwd);
    run_command(&mut cmd)
}

/// Runs `memshim ARGS`.
pub fn memshim<S: AsRef<OsStr>>(args: &[S]) -> Outcome {
    run_command(memshim_cmd().args(args))
}

/// A `memshim` command for a test to finish configuring and hand to [`run_ok`].
pub fn memshim_cmd() -> Command {
    Command::new(&artifacts().memshim)
}

/// Runs a configured command as hermetically as the others; it must exit 0.
pub fn run_ok(cmd: &mut Command) -> Outcome {
    let out = run_command(cmd);
    assert!(out.status.success(), "{}", out.describe());
    out
}

/// Runs `memshim run --quiet -o <dir>/traces -- prog args` in the test directory (quiet, so that
/// stderr holds only the program's own output).
pub fn memshim_run<S: AsRef<OsStr>>(dir: &TestDir, prog: &Path, args: &[S]) -> Outcome {
    let mut cmd = Command::new(&artifacts().memshim);
    cmd.arg("run")
        .arg("--quiet")
        .arg("-o")
        .arg(dir.traces())
        .arg("--")
        .arg(prog)
        .args(args)
        .current_dir(&dir.root);
    run_command(&mut cmd)
}

/// `memshim run` that must exit 0 (the examples all exit 0 unless a test says otherwise).
pub fn memshim_run_ok<S: AsRef<OsStr>>(dir: &TestDir, prog: &Path, args: &[S]) -> Outcome {
    let out = memshim_run(dir, prog, args);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    out
}

/// The trace files in a directory, sorted.
pub fn trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension() == Some(OsStr::new("mshim")))
        .collect();
    files.sort();
    files
}

/// Runs `prog args` under `memshim run` (which must exit 0) and reports the traces directory.
pub fn traced<S: AsRef<OsStr>>(dir: &TestDir, prog: &Path, args: &[S]) -> (Outcome, Value) {
    let out = memshim_run_ok(dir, prog, args);
    let report = report_json(&dir.traces());
    (out, report)
}

/// This host's name up to its first dot, as the shim puts it in a rank's trace file name.
pub fn short_hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
    name.trim()
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
