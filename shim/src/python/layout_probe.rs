//! The hand-written layouts against the headers of the interpreters on this machine: compiles
//! `scripts/python-layout.c` against each CPython 3.13 and 3.14 it finds (pyenv's, `python3` on
//! PATH, and the 3.14 that `scripts/python314.sh` puts into `~/.cache/memshim/python3.14`) and
//! compares every offset it prints with `layout` and `debug_offsets`. A version not installed is
//! skipped with a note: CI installs 3.14.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::layout::{
    for_minor, Chain, Line, BYTES_DATA, BYTES_SIZE, OB_TYPE, STR_LENGTH, STR_STATE, TSTATE_NEXT,
};

/// Interpreters of 3.13 and later that the probe knows how to read.
fn candidates() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut found = vec![
        PathBuf::from("python3"),
        home.join(".cache/memshim/python3.14/bin/python3.14"),
    ];
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".pyenv"));
    if let Ok(entries) = std::fs::read_dir(pyenv.join("versions")) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            for minor in [13, 14] {
                if name.starts_with(&format!("3.{minor}.")) {
                    found.push(e.path().join(format!("bin/python3.{minor}")));
                }
            }
        }
    }
    found
}

/// The probe's "name value" lines for the interpreter `python`, or `None` if it cannot be run
/// (not there, too old, or no headers).
fn probe(python: &Path, out: &Path) -> Option<HashMap<String, i64>> {
    let info = Command::new(python)
        .args([
            "-c",
            "import sys, sysconfig; print(sys.version_info[1]); print(sysconfig.get_paths()['include'])",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8(info.stdout).ok()?;
    let mut lines = text.lines();
    let minor: u32 = lines.next()?.trim().parse().ok()?;
    let include = PathBuf::from(lines.next()?.trim());
    if !(13..=14).contains(&minor) || !include.join("Python.h").exists() {
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/python-layout.c");
    let exe = out.join(format!("layout-3.{minor}"));
    let built = Command::new("cc")
        .arg("-DPy_BUILD_CORE")
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(include.join("internal"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .ok()?;
    assert!(
        built.success(),
        "{src:?} does not build against {include:?}"
    );
    let printed = Command::new(&exe).output().ok()?;
    let mut values = HashMap::new();
    for line in String::from_utf8(printed.stdout).ok()?.lines() {
        let (k, v) = line.split_once(' ')?;
        values.insert(k.to_string(), v.parse().ok()?);
    }
    Some(values)
}

#[test]
fn layouts_match_the_headers_of_the_interpreters_here() {
    let out = std::env::temp_dir().join(format!("memshim-layout-probe-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = Vec::new();
    for python in candidates() {
        let Some(v) = probe(&python, &out) else {
            continue;
        };
        let minor = v["minor"] as u32;
        if v["free_threaded"] != 0 || v["debug_build"] != 0 {
            continue;
        }
        let l = for_minor(minor).unwrap();
        let at = |k: &str| v[k] as usize;
        let Chain::EntryFrames {
            owner,
            owned_by_cstack,
            cframe_current: None,
        } = l.chain
        else {
            panic!("3.{minor}: the probe reads the entry-frame chain of 3.13 and later")
        };
        let Line::Api { instr } = l.line else {
            panic!("3.{minor}: lines come from PyUnstable_InterpreterFrame_GetLine")
        };
        let want = [
            ("tstate_frame", l.tstate_frame),
            ("tstate_next", TSTATE_NEXT),
            ("frame_code", l.frame_code),
            ("frame_code_tags", l.frame_code_tags),
            ("frame_code_size", 8),
            ("frame_previous", l.frame_previous),
            ("frame_instr", instr),
            ("frame_owner", owner),
            ("frame_owner_size", 1),
            ("entry_owner", usize::from(owned_by_cstack)),
            ("code_filename", l.code_filename),
            ("code_name", l.code_name),
            ("code_firstlineno", l.code_firstlineno),
            ("code_linetable", l.code_linetable.unwrap()),
            ("code_adaptive", l.code_adaptive.unwrap()),
            ("ascii_size", l.ascii_size),
            ("compact_size", l.compact_size),
            ("ob_type", OB_TYPE),
            ("str_length", STR_LENGTH),
            ("str_state", STR_STATE),
            // codes::read_str's bits: kind 2-4, compact 5, ascii 6.
            ("str_kind_mask", 7 << 2),
            ("str_compact_mask", 1 << 5),
            ("str_ascii_mask", 1 << 6),
            ("bytes_size", BYTES_SIZE),
            ("bytes_data", BYTES_DATA),
            ("debug.runtime", 0),
            ("debug.cookie_size", 8),
        ];
        for (k, w) in want {
            assert_eq!(at(k), w, "3.{minor} ({python:?}): {k}");
        }
        if let Some(d) = super::debug_offsets::for_minor(l.minor) {
            let both = [("version", d.version), ("free_threaded", d.free_threaded)];
            let fields = d.fields(l).expect("an entry-frame layout");
            let positions = both.into_iter().chain(fields.map(|(k, at, _)| (k, at)));
            for (k, w) in positions {
                assert_eq!(
                    at(&format!("debug.{k}")),
                    w,
                    "3.{minor} ({python:?}): debug.{k}"
                );
            }
        }
        checked.push(format!("3.{minor} ({})", python.display()));
    }
    let _ = std::fs::remove_dir_all(&out);
    // Which were compared shows in `cargo test -- --nocapture`; none is not a failure here.
    eprintln!("layout probe compared: {checked:?}");
}
