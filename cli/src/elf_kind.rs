//! Whether a program can be traced at all: the shim is preloaded by the dynamic loader, so a static
//! executable (no `PT_INTERP` program header: no loader runs) never loads it. Reads only the ELF
//! header and program headers of the file `memshim run` is about to start.
//!
//! Never: refuse to run anything; a file that is not ELF (a script) is "unknown" and run as usual.
use std::io::Read;
use std::path::{Path, PathBuf};

/// What the executable is.
#[derive(Debug, PartialEq, Eq)]
pub enum Linking {
    /// Has an interpreter: the loader will preload the shim.
    Dynamic,
    /// 64-bit ELF without an interpreter: nothing will load the shim.
    Static,
    /// Not a 64-bit little-endian ELF file (a script, another format), or unreadable.
    Unknown,
}

/// The program `command` names, found on `PATH` as `execvp` would.
pub fn resolve(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
}

/// How the file at `path` is linked.
pub fn linking(path: &Path) -> Linking {
    let mut head = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(64 * 1024).read_to_end(&mut head));
    match read {
        Ok(_) => from_bytes(&head),
        Err(_) => Linking::Unknown,
    }
}

/// `PT_INTERP`: the program header naming the dynamic loader.
const PT_INTERP: u32 = 3;

fn from_bytes(b: &[u8]) -> Linking {
    // ELF magic, 64-bit, little-endian.
    if b.len() < 64 || b[..4] != *b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Linking::Unknown;
    }
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let mut phoff = [0u8; 8];
    phoff.copy_from_slice(&b[32..40]);
    let phoff = u64::from_le_bytes(phoff) as usize;
    let (entsize, count) = (u16_at(54), u16_at(56));
    if entsize < 4 {
        return Linking::Unknown;
    }
    for i in 0..count {
        let at = phoff.saturating_add(i.saturating_mul(entsize));
        let Some(p_type) = b.get(at..at.saturating_add(4)) else {
            return Linking::Unknown;
        };
        if u32::from_le_bytes([p_type[0], p_type[1], p_type[2], p_type[3]]) == PT_INTERP {
            return Linking::Dynamic;
        }
    }
    Linking::Static
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_is_dynamic_and_a_script_is_unknown() {
        let me = std::env::current_exe().unwrap();
        assert_eq!(linking(&me), Linking::Dynamic);
        let sh = resolve("sh").expect("sh on PATH");
        assert!(sh.is_absolute());
        assert_eq!(from_bytes(b"#!/bin/sh\necho hi\n"), Linking::Unknown);
        assert_eq!(linking(Path::new("/nonexistent/prog")), Linking::Unknown);
    }

    #[test]
    fn an_elf_without_an_interpreter_is_static() {
        // An ELF header with one PT_LOAD program header right after it.
        let mut b = vec![0u8; 64 + 56];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&1u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(from_bytes(&b), Linking::Static);
        b[64..68].copy_from_slice(&PT_INTERP.to_le_bytes());
        assert_eq!(from_bytes(&b), Linking::Dynamic);
        // Program headers past what was read: not a guess.
        b[56..58].copy_from_slice(&3u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(from_bytes(&b), Linking::Unknown);
    }
}
