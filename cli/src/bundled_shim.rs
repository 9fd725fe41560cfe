//! The copy of `libmemshim.so` built into this executable (see `cli/build.rs`), for a `memshim`
//! installed without the file beside it (`cargo install`, a wheel). The loader needs a file, so the
//! copy is written once into the user's cache, `~/.cache/memshim/shim/<version>-<digest>/`
//! (directories 0700), and used from there while its bytes are this build's.
//!
//! Never: follow a symlink planted at the file's path, or use a file whose bytes differ.
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

static BUNDLED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmemshim.so"));

/// The bundled shim's path on disk, written there if needed; `None` when this build carries none.
pub fn path() -> Result<Option<PathBuf>> {
    if BUNDLED.is_empty() {
        return Ok(None);
    }
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(c) => PathBuf::from(c),
        None => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".cache"),
            None => std::env::temp_dir(),
        },
    };
    let dir = base.join("memshim").join("shim").join(format!(
        "{}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        digest(BUNDLED)
    ));
    private_dir(&dir)?;
    let file = dir.join("libmemshim.so");
    if holds_bundled(&file) {
        return Ok(Some(file));
    }
    // Written beside, then renamed into place: a run started meanwhile never loads half a file.
    let tmp = dir.join(format!(".libmemshim.so.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .with_context(|| format!("cannot write the bundled shim to {}", tmp.display()))?;
    f.write_all(BUNDLED)
        .and_then(|()| f.sync_all())
        .and_then(|()| fs::set_permissions(&tmp, fs::Permissions::from_mode(0o500)))
        .and_then(|()| fs::rename(&tmp, &file))
        .with_context(|| format!("cannot write the bundled shim to {}", file.display()))?;
    Ok(Some(file))
}

/// Creates `dir` (and its parents) for this user only; refuses one that another user owns or
/// that others can write to.
fn private_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {} for the bundled shim", dir.display()))?;
    let meta =
        fs::symlink_metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    // /proc/self belongs to the process's user: its uid without a system-call binding.
    let me = fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid());
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        bail!(
            "{} is not a private directory of this user (a symlink, another user's, or writable by others); remove it, or set MEMSHIM_LIB to a libmemshim.so",
            dir.display()
        );
    }
    Ok(())
}

/// True when `file` is a regular file (not a symlink) holding exactly the bundled bytes.
fn holds_bundled(file: &Path) -> bool {
    let Ok(mut f) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)
    else {
        return false;
    };
    let same_size =
        File::metadata(&f).is_ok_and(|m| m.is_file() && m.len() == BUNDLED.len() as u64);
    let mut bytes = Vec::with_capacity(BUNDLED.len());
    same_size && f.read_to_end(&mut bytes).is_ok() && bytes == BUNDLED
}

/// FNV-1a: names the build's copy (not a defence: the bytes are compared before use).
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
