//! The module map: every loaded object with its path, load bias, segments and GNU build id, so the
//! CLI can symbolize offline even when the process died before it could symbolize itself.
//!
//! # Safety
//! `dl_iterate_phdr` hands the callback a valid `dl_phdr_info` whose program headers and loaded
//! segments stay mapped for the duration of the callback; notes are read only within the bounds of
//! a `PT_NOTE` segment. Never called from the writer thread (it takes the loader's lock, which a
//! producer blocked on a full channel may hold).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use memshim_trace::{Module, Segment};

const NT_GNU_BUILD_ID: u32 = 3;

/// The loader's running counts of loads and unloads: when they change, the module map changed.
pub fn counters() -> (u64, u64) {
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `data`, a &mut (u64, u64).
        unsafe {
            let out = &mut *(data as *mut (u64, u64));
            *out = ((*info).dlpi_adds, (*info).dlpi_subs);
        }
        1
    }
    let mut out = (0u64, 0u64);
    // SAFETY: the callback matches the expected signature and `out` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut out as *mut _ as *mut c_void) };
    out
}

/// Every object loaded now. The main program (which the loader names "") gets `exe` as its path.
pub fn scan(exe: &str) -> Vec<Module> {
    struct Ctx<'a> {
        exe: &'a str,
        out: Vec<Module>,
    }
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `data`, a &mut Ctx.
        let (info, ctx) = unsafe { (&*info, &mut *(data as *mut Ctx)) };
        // Called from C: a panic reading one object leaves that object out, never unwinds.
        let module = catch_unwind(AssertUnwindSafe(|| module(info, ctx.exe)));
        if let Ok(m) = module {
            ctx.out.push(m);
        }
        0
    }
    /// One loaded object.
    fn module(info: &libc::dl_phdr_info, exe: &str) -> Module {
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null dlpi_name is a NUL-terminated string owned by the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        let path = if name.is_empty() {
            exe.to_string()
        } else {
            name
        };
        let base = info.dlpi_addr;
        let mut segments = Vec::new();
        let mut build_id = Vec::new();
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            match ph.p_type {
                libc::PT_LOAD => segments.push(Segment {
                    start: base + ph.p_vaddr,
                    len: ph.p_memsz,
                    exec: ph.p_flags & libc::PF_X != 0,
                }),
                libc::PT_NOTE if build_id.is_empty() => {
                    let start = (base + ph.p_vaddr) as *const u8;
                    // SAFETY: a PT_NOTE segment lies inside a loaded PT_LOAD segment and is
                    // p_memsz bytes long.
                    let notes = unsafe { std::slice::from_raw_parts(start, ph.p_memsz as usize) };
                    if let Some(id) = find_build_id(notes) {
                        build_id = id.to_vec();
                    }
                }
                _ => {}
            }
        }
        Module {
            path,
            base,
            build_id,
            segments,
        }
    }
    let mut ctx = Ctx {
        exe,
        out: Vec::new(),
    };
    // SAFETY: the callback matches the expected signature and `ctx` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut ctx as *mut _ as *mut c_void) };
    ctx.out
}

/// The executable range of the module that contains `addr`.
pub fn exec_range_of(modules: &[Module], addr: u64) -> Option<(u64, u64)> {
    let m = modules.iter().find(|m| {
        m.segments
            .iter()
            .any(|s| addr >= s.start && addr < s.start + s.len)
    })?;
    let lo = m
        .segments
        .iter()
        .filter(|s| s.exec)
        .map(|s| s.start)
        .min()?;
    let hi = m
        .segments
        .iter()
        .filter(|s| s.exec)
        .map(|s| s.start + s.len)
        .max()?;
    Some((lo, hi))
}

/// Finds the GNU build id in a block of ELF notes.
pub fn find_build_id(mut notes: &[u8]) -> Option<&[u8]> {
    let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    while notes.len() >= 12 {
        let namesz = word(&notes[0..4]) as usize;
        let descsz = word(&notes[4..8]) as usize;
        let kind = word(&notes[8..12]);
        let name_end = 12usize.checked_add(namesz.next_multiple_of(4))?;
        let desc_end = name_end.checked_add(descsz.next_multiple_of(4))?;
        if desc_end > notes.len() {
            return None;
        }
        if kind == NT_GNU_BUILD_ID && namesz == 4 && &notes[12..16] == b"GNU\0" {
            return Some(&notes[name_end..name_end + descsz]);
        }
        notes = &notes[desc_end..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(kind: u32, name: &[u8], desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(name);
        v.resize(v.len().next_multiple_of(4), 0);
        v.extend_from_slice(desc);
        v.resize(v.len().next_multiple_of(4), 0);
        v
    }

    #[test]
    fn build_id_after_another_note() {
        let mut notes = note(1, b"GNU\0", &[9; 16]);
        notes.extend(note(NT_GNU_BUILD_ID, b"GNU\0", &[0xab, 0xcd, 0xef]));
        assert_eq!(find_build_id(&notes), Some(&[0xab, 0xcd, 0xef][..]));
        assert_eq!(find_build_id(&notes[..notes.len() - 4]), None);
        assert_eq!(find_build_id(&[1, 2, 3]), None);
    }

    #[test]
    fn this_test_binary_is_in_the_map_with_its_build_id() {
        let mods = scan("/proc/self/exe");
        assert!(!mods.is_empty());
        let here = exec_range_of(
            &mods,
            this_test_binary_is_in_the_map_with_its_build_id as fn() as usize as u64,
        );
        assert!(here.is_some());
        assert!(mods.iter().any(|m| m.path.contains("libc.so")));
        let (adds, _) = counters();
        assert!(adds >= mods.len() as u64);
    }
}
