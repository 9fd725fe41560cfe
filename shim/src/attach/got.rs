//! Redirecting a running program's already-bound heap calls to the shim: every loaded object's
//! import table (GOT) holds the address each of its calls to `malloc`, `free`, ... jumps to, found
//! through its dynamic section's relocations (`DT_JMPREL` for calls through the PLT, `DT_RELA`'s
//! `GLOB_DAT` entries for code built without a PLT). Rewriting those words sends every later call
//! to the shim's hook; writing the old words back undoes it.
//!
//! A slot is rewritten only when it holds the real function the hook forwards to, or (a call
//! through the PLT not yet bound, under lazy binding) an address inside its own object: a slot
//! bound to anything else (an allocator the program defines itself) is left alone, so the program's
//! calls keep reaching what they reached. The loader and the shim itself are never rewritten.
//! Function pointers the program copied into its own data before attach are not seen.
//!
//! Never: run on a path a traced call takes (it takes the loader's lock), or write a word it did not
//! read as one of the two kinds above.
//!
//! # Safety
//! `dl_iterate_phdr` hands the callback a valid `dl_phdr_info` for each loaded object, whose
//! program headers, dynamic section, symbol and string tables and relocated import table stay
//! mapped while the callback runs (the loader's lock is held). Every table is read within the
//! bounds its dynamic entry gives. A slot is an aligned 8-byte word of the object's writable or
//! RELRO data, read and written as one atomic word (other threads may be calling through it); a
//! RELRO page is made writable with `mprotect` only for the write and read-only again at once.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One function to redirect: its name, the shim's hook, and the real function the hook calls.
pub struct Target {
    pub name: &'static CStr,
    pub hook: usize,
    pub real: usize,
}

/// A rewritten slot, with what it held before.
struct Slot {
    addr: usize,
    old: usize,
    hook: usize,
    relro: bool,
}

/// The slots rewritten now; only `patch` and `restore` touch it, never a traced call. Holds
/// `true` once restored: a patch after that (a library opened just before detach, rebound at a
/// later `dlsym`) must not redirect anything again.
static SLOTS: Mutex<(Vec<Slot>, bool)> = Mutex::new((Vec::new(), false));

/// Load addresses of libraries the shim opened for itself (CUPTI, NVML): never rewritten, so what
/// they allocate stays the C library's on every thread. Rewritten, their blocks allocated on a shim
/// thread would come from the shim's own heap and be freed into the C library after detach.
static KEPT_OUT: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// Keeps the library `handle` (from `dlopen`) out of every later patch.
pub fn keep_out(handle: *mut c_void) {
    if handle.is_null() {
        return;
    }
    let mut map: *const usize = std::ptr::null();
    // SAFETY: a handle dlopen returned; RTLD_DI_LINKMAP writes a `struct link_map *`, whose first
    // field is the object's load address (`l_addr`, the `dlpi_addr` the patch sees).
    let base = unsafe {
        if libc::dlinfo(
            handle,
            libc::RTLD_DI_LINKMAP,
            (&mut map as *mut *const usize).cast(),
        ) != 0
            || map.is_null()
        {
            return;
        }
        *map
    };
    if KEPT_OUT.iter().any(|k| k.load(Ordering::Acquire) == base) {
        return;
    }
    if let Some(free) = KEPT_OUT.iter().find(|k| k.load(Ordering::Acquire) == 0) {
        free.store(base, Ordering::Release);
    }
}

fn kept_out(base: usize) -> bool {
    KEPT_OUT.iter().any(|k| k.load(Ordering::Acquire) == base)
}

/// What a patch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Patched {
    pub slots: u32,
    pub modules: u32,
}

const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_STRSZ: i64 = 10;
const DT_JMPREL: i64 = 23;
const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;
const SYM_SIZE: usize = 24;
const RELA_SIZE: usize = 24;

/// Rewrites the slots of every loaded object but the loader and the object holding `own` (an
/// address inside the shim). Slots already rewritten are kept as they are.
pub fn patch(targets: &[Target], own: usize) -> Patched {
    struct Ctx<'a> {
        targets: &'a [Target],
        own: usize,
        loader: usize,
        found: Vec<Slot>,
        done: Patched,
    }
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `data`, a &mut Ctx.
        let (info, ctx) = unsafe { (&*info, &mut *(data as *mut Ctx)) };
        let image = Image::of(info);
        let base = info.dlpi_addr as usize;
        if image.contains(ctx.own) || (ctx.loader != 0 && base == ctx.loader) || kept_out(base) {
            return 0;
        }
        let before = ctx.found.len();
        image.each_slot(ctx.targets, |addr, target, lazy| {
            // SAFETY: `addr` is an aligned slot of this object's import table (see `each_slot`).
            let now = unsafe { AtomicUsize::from_ptr(addr as *mut usize) }.load(Ordering::Relaxed);
            let bound_here = lazy && image.contains(now);

            if now != target.real && !bound_here {
                return;
            }
            let relro = image.in_relro(addr);
            if write_slot(addr, target.hook, relro) {
                ctx.found.push(Slot {
                    addr,
                    old: now,
                    hook: target.hook,
                    relro,
                });
            }
        });
        if ctx.found.len() > before {
            ctx.done.modules += 1;
            ctx.done.slots += (ctx.found.len() - before) as u32;
        }
        0
    }
    let Ok(mut slots) = SLOTS.lock() else {
        return Patched::default();
    };
    if slots.1 {
        return Patched::default();
    }
    let mut ctx = Ctx {
        targets,
        own,
        // SAFETY: getauxval has no preconditions; AT_BASE is the loader's load address.
        loader: unsafe { libc::getauxval(libc::AT_BASE) } as usize,
        found: Vec::new(),
        done: Patched::default(),
    };
    // SAFETY: the callback matches the expected signature and `ctx` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut ctx as *mut Ctx as *mut c_void) };
    slots.0.extend(ctx.found);
    ctx.done
}

/// Writes back every slot that still holds the hook put there; returns how many were restored.
pub fn restore() -> u32 {
    let Ok(mut slots) = SLOTS.lock() else {
        return 0;
    };
    let mut restored = 0;
    slots.1 = true;
    for s in slots.0.drain(..) {
        // SAFETY: the slot was an import-table word of a loaded object when patched, and objects
        // that held the shim's hooks are not unloaded before the hooks are gone (the loader only
        // unloads on dlclose, and the program never called through a slot it cannot see).
        let now = unsafe { AtomicUsize::from_ptr(s.addr as *mut usize) }.load(Ordering::Relaxed);
        if now == s.hook && write_slot(s.addr, s.old, s.relro) {
            restored += 1;
        }
    }
    restored
}

/// Stores `value` in the slot at `addr`, making its page writable for the moment when it is RELRO.
fn write_slot(addr: usize, value: usize, relro: bool) -> bool {
    let page = crate::sys::page_size() as usize;
    let start = (addr & !(page - 1)) as *mut c_void;
    // SAFETY: `start` is the page holding a slot of a loaded object's data segment.
    if relro && unsafe { libc::mprotect(start, page, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        return false;
    }
    // SAFETY: `addr` is an aligned, mapped and now writable word of the import table.
    unsafe { AtomicUsize::from_ptr(addr as *mut usize) }.store(value, Ordering::Release);
    if relro {
        // SAFETY: as above; RELRO pages are read-only once the loader has relocated them.
        unsafe { libc::mprotect(start, page, libc::PROT_READ) };
    }
    true
}

/// One loaded object as `dl_phdr_info` describes it.
struct Image<'a> {
    info: &'a libc::dl_phdr_info,
}

impl<'a> Image<'a> {
    fn of(info: &'a libc::dl_phdr_info) -> Self {
        Image { info }
    }

    fn phdrs(&self) -> &'a [libc::Elf64_Phdr] {
        if self.info.dlpi_phdr.is_null() {
            return &[];
        }
        // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
        unsafe { std::slice::from_raw_parts(self.info.dlpi_phdr, self.info.dlpi_phnum as usize) }
    }

    fn base(&self) -> usize {
        self.info.dlpi_addr as usize
    }

    /// Whether `addr` lies in one of the object's loaded segments.
    fn contains(&self, addr: usize) -> bool {
        self.phdrs().iter().any(|p| {
            let lo = self.base() + p.p_vaddr as usize;
            p.p_type == libc::PT_LOAD && (lo..lo + p.p_memsz as usize).contains(&addr)
        })
    }

    /// Whether `addr` is on a page the loader made read-only after relocating (`PT_GNU_RELRO`,
    /// whose last partial page stays writable).
    fn in_relro(&self, addr: usize) -> bool {
        let page = crate::sys::page_size() as usize;
        self.phdrs().iter().any(|p| {
            let lo = (self.base() + p.p_vaddr as usize) & !(page - 1);
            let hi = (self.base() + (p.p_vaddr + p.p_memsz) as usize) & !(page - 1);
            p.p_type == libc::PT_GNU_RELRO && (lo..hi).contains(&addr)
        })
    }

    /// A table address from the dynamic section: the loader relocates most of them in place, but
    /// not every object's (the vDSO's), so a value below the base is still relative.
    fn abs(&self, v: u64) -> usize {
        let v = v as usize;
        if v < self.base() {
            self.base() + v
        } else {
            v
        }
    }

    /// Calls `f(slot address, target, lazy)` for each import-table slot of the object whose
    /// relocation names one of `targets`; `lazy` for calls through the PLT.
    fn each_slot(&self, targets: &[Target], mut f: impl FnMut(usize, &Target, bool)) {
        let Some(dynamic) = self.phdrs().iter().find(|p| p.p_type == libc::PT_DYNAMIC) else {
            return;
        };
        let mut at = (self.base() + dynamic.p_vaddr as usize) as *const [i64; 2];
        let (mut strtab, mut strsz, mut symtab) = (0, 0, 0);
        let (mut jmprel, mut jmpsz, mut rela, mut relasz) = (0, 0, 0, 0);
        for _ in 0..(dynamic.p_memsz as usize / 16) {
            // SAFETY: the dynamic section is p_memsz bytes of 16-byte entries, ending at DT_NULL.
            let [tag, val] = unsafe { *at };
            match tag {
                DT_NULL => break,
                DT_STRTAB => strtab = self.abs(val as u64),
                DT_STRSZ => strsz = val as usize,
                DT_SYMTAB => symtab = self.abs(val as u64),
                DT_JMPREL => jmprel = self.abs(val as u64),
                DT_PLTRELSZ => jmpsz = val as usize,
                DT_RELA => rela = self.abs(val as u64),
                DT_RELASZ => relasz = val as usize,
                _ => {}
            }
            // SAFETY: still within the dynamic section (the loop is bounded by its size).
            at = unsafe { at.add(1) };
        }
        if strtab == 0 || symtab == 0 {
            return;
        }
        let name_of = |sym: usize| -> Option<&CStr> {
            // SAFETY: a relocation's symbol index is an entry of the object's symbol table.
            let st_name = unsafe { *((symtab + sym * SYM_SIZE) as *const u32) } as usize;
            if st_name >= strsz {
                return None;
            }
            // SAFETY: st_name is an offset inside the string table, whose strings end in NUL.
            Some(unsafe { CStr::from_ptr((strtab + st_name) as *const libc::c_char) })
        };
        for (table, size, lazy) in [(jmprel, jmpsz, true), (rela, relasz, false)] {
            if table == 0 {
                continue;
            }
            for i in 0..size / RELA_SIZE {
                // SAFETY: the table holds size / 24 Elf64_Rela entries (offset, info, addend).
                let [offset, info] = unsafe { *((table + i * RELA_SIZE) as *const [u64; 2]) };
                let (kind, sym) = ((info & 0xffff_ffff) as u32, (info >> 32) as usize);
                let wanted = if lazy {
                    R_X86_64_JUMP_SLOT
                } else {
                    R_X86_64_GLOB_DAT
                };
                if kind != wanted || sym == 0 {
                    continue;
                }
                let addr = self.base() + offset as usize;
                if !addr.is_multiple_of(8) {
                    continue;
                }
                if let Some(t) = name_of(sym).and_then(|n| targets.iter().find(|t| t.name == n)) {
                    f(addr, t, lazy);
                }
            }
        }
    }
}
