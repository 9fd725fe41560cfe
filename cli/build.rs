//! Builds the shim into the CLI, so that a `memshim` installed on its own (`cargo install --path
//! cli`, a wheel) can run programs: `run` looks for `libmemshim.so` beside itself first and falls
//! back to this copy (see `src/bundled_shim.rs`).
//!
//! The shim is built by a cargo of its own, in a target directory of its own (cargo's lock on the
//! outer one is held while this runs), in release mode without debug information (2 MB instead of
//! 23). `MEMSHIM_BUNDLE_SHIM=0` leaves the copy out; the CLI then needs the file beside it.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dest = out.join("libmemshim.so");
    println!("cargo:rerun-if-env-changed=MEMSHIM_BUNDLE_SHIM");
    if env::var("MEMSHIM_BUNDLE_SHIM").as_deref() == Ok("0") {
        std::fs::write(&dest, b"").expect("write the empty stand-in");
        return;
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("cli/ sits in the workspace");
    for watched in [
        "shim/src",
        "shim/Cargo.toml",
        "trace/src",
        "trace/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    // <target>/<profile>/build/memshim-cli-<hash>/out: a directory beside <profile> keeps the inner
    // build's own incremental state from one build script run to the next.
    let target = out
        .ancestors()
        .nth(4)
        .map_or_else(|| out.join("bundled-shim"), |t| t.join("bundled-shim"));
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--package",
        "memshim-shim",
        "--manifest-path",
    ])
    .arg(root.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target)
    .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
    .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    // What the outer build was given for itself (a fuzzer's instrumentation, a jobserver, its own
    // target directory) is not for the shim.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot start cargo to build the shim: {e}"));
    assert!(
        status.success(),
        "building the shim for the CLI failed ({status})"
    );
    copy(&target.join("release").join("libmemshim.so"), &dest);
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
}
