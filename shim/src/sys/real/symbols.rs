//! How the real functions behind every hook are found: the bootstrap that resolves them once, and
//! glibc's own `dlsym` and `dlopen` for the rest of the shim (the one place it opens libraries and
//! looks up their symbols).
//!
//! # Safety
//! Each hooked symbol is resolved once with `dlsym(RTLD_NEXT, name)`, so memshim sits in front of
//! whatever allocator comes next (glibc, or jemalloc/tcmalloc preloaded after us). `dlsym` itself may
//! call `calloc`/`malloc` while we resolve: those calls, made on the resolving thread, are served from a
//! static bootstrap arena, and `free` of an arena pointer is ignored. A resolved pointer is stored once
//! and never changes, and it always has the C signature of the symbol it names, which is what makes the
//! transmutes below sound. When a symbol cannot be found, glibc's `__libc_*` entry points stand in.
#![allow(unsafe_code)]

pub(super) use std::ffi::{c_char, c_int, c_void, CStr};
pub(super) use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};

pub(super) use crate::sys::bootstrap;
pub(super) use crate::sys::set_errno;

/// glibc's own `dlsym`, found with `dlvsym` because the shim exports a `dlsym` of its own.
static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

const UNRESOLVED: u8 = 0;
const RESOLVING: u8 = 1;
const RESOLVED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNRESOLVED);

/// The thread id of the thread resolving the symbols (0 when none): calls it makes while resolving are
/// served from the arena. An atomic, not a thread-local: see `guard` for why the shim keeps no Rust
/// thread-locals on the allocation path.
static RESOLVER: AtomicU32 = AtomicU32::new(0);

pub(super) fn is_resolver() -> bool {
    let r = RESOLVER.load(Ordering::Acquire);
    r != 0 && r == crate::sys::gettid()
}

/// One resolvable symbol: its name and the address found for it (0 until resolved or when absent).
pub struct Sym {
    name: &'static CStr,
    addr: AtomicUsize,
}

impl Sym {
    const fn new(name: &'static CStr) -> Self {
        Sym {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    /// The address, once resolution is complete.
    #[inline]
    pub fn get(&self) -> Option<usize> {
        if !ensure_resolved() {
            return None;
        }
        match self.addr.load(Ordering::Relaxed) {
            0 => None,
            a => Some(a),
        }
    }
}

/// A symbol that only some processes have (libnuma's), looked up at its first use instead of with
/// the others. glibc's `dlsym` allocates on its error path, with `malloc` as the loader binds it: for a
/// process whose first allocator is jemalloc, that is jemalloc, called from inside jemalloc's own
/// first `mmap` (which reaches the shim's hook and resolves the symbols) while it holds its init
/// lock. A symbol that every glibc exports never takes that path; an optional one is first asked for
/// when the program calls it, which means the library that defines it is loaded.
pub struct LazySym {
    name: &'static CStr,
    addr: AtomicUsize,
}

/// `LazySym::addr` once a look-up has found nothing.
const ABSENT: usize = 1;

impl LazySym {
    const fn new(name: &'static CStr) -> Self {
        LazySym {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    /// The address, looked up the first time it is asked for.
    #[inline]
    pub fn get(&self) -> Option<usize> {
        match self.addr.load(Ordering::Acquire) {
            ABSENT => None,
            0 => {
                if !ensure_resolved() {
                    return None;
                }
                let p = dlsym(libc::RTLD_NEXT, self.name) as usize;
                // Racing threads find the same address; storing it twice is harmless.
                self.addr
                    .store(if p == 0 { ABSENT } else { p }, Ordering::Release);
                (p != 0).then_some(p)
            }
            a => Some(a),
        }
    }
}

macro_rules! symbols {
    ($($id:ident = $name:literal;)*) => {
        $(pub static $id: Sym = Sym::new($name);)*
        static ALL: &[&Sym] = &[$(&$id),*];
    };
}

symbols! {
    MALLOC = c"malloc";
    CALLOC = c"calloc";
    REALLOC = c"realloc";
    FREE = c"free";
    POSIX_MEMALIGN = c"posix_memalign";
    ALIGNED_ALLOC = c"aligned_alloc";
    MEMALIGN = c"memalign";
    VALLOC = c"valloc";
    PVALLOC = c"pvalloc";
    MALLOC_USABLE_SIZE = c"malloc_usable_size";
    MMAP = c"mmap";
    MUNMAP = c"munmap";
    MREMAP = c"mremap";
    EXECVE = c"execve";
    EXECV = c"execv";
    EXECVP = c"execvp";
    EXECVPE = c"execvpe";
    FEXECVE = c"fexecve";
    SYSCALL = c"syscall";
    CLOSE = c"close";
    SIGACTION = c"sigaction";
    SIGNAL = c"signal";
    SIGALTSTACK = c"sigaltstack";
    DUP2 = c"dup2";
    DUP3 = c"dup3";
    CLONE = c"clone";
    DLCLOSE = c"dlclose";
    SCHED_SETAFFINITY = c"sched_setaffinity";
    PTHREAD_SETAFFINITY_NP = c"pthread_setaffinity_np";
    UNDERSCORE_EXIT = c"_exit";
    UNDERSCORE_CAPITAL_EXIT = c"_Exit";
    SETRLIMIT = c"setrlimit";
    PRLIMIT = c"prlimit";
}

pub static MBIND: LazySym = LazySym::new(c"mbind");
pub static SET_MEMPOLICY: LazySym = LazySym::new(c"set_mempolicy");
pub static MIGRATE_PAGES: LazySym = LazySym::new(c"migrate_pages");
pub static MOVE_PAGES: LazySym = LazySym::new(c"move_pages");
// glibc 2.34 and later.
pub static EXECVEAT: LazySym = LazySym::new(c"execveat");
pub static CLOSE_RANGE: LazySym = LazySym::new(c"close_range");
pub static CLOSEFROM: LazySym = LazySym::new(c"closefrom");

/// The malloc family: served by the allocator the program's own calls reach.
const HEAP_NAMES: [&CStr; 10] = [
    c"malloc",
    c"calloc",
    c"realloc",
    c"free",
    c"posix_memalign",
    c"aligned_alloc",
    c"memalign",
    c"valloc",
    c"pvalloc",
    c"malloc_usable_size",
];

/// Where the shim's own heap calls go. Normally the allocator after the shim (`RTLD_NEXT`). But
/// when another allocator comes first in the global scope (jemalloc or tcmalloc preloaded before
/// the shim, or one the executable defines), the program, libc and every library the shim loads
/// (libunwind, zstd's C code) allocate and free through that one: the shim's own blocks must come
/// from it too, or a block would be freed by an allocator that never made it.
fn heap_handle() -> *mut c_void {
    if allocator_before_the_shim().is_some() {
        libc::RTLD_DEFAULT
    } else {
        libc::RTLD_NEXT
    }
}

/// The address of the `malloc` a lookup in the global scope finds first, when it is a shared
/// library's ahead of the shim. Not the executable's: an executable that takes `malloc`'s address
/// exports a canonical PLT entry for it (Ubuntu's python3.12 does), which only jumps to the real
/// definition, the shim's; calling it from the shim would recurse forever.
fn allocator_before_the_shim() -> Option<*mut c_void> {
    let first = dlsym(libc::RTLD_DEFAULT, c"malloc");
    if first.is_null() || same_object(first as usize, heap_handle as fn() -> *mut c_void as usize) {
        return None;
    }
    // SAFETY: getauxval has no preconditions; AT_PHDR is an address inside the executable's image.
    let exe = unsafe { libc::getauxval(libc::AT_PHDR) } as usize;
    if exe != 0 && same_object(first as usize, exe) {
        return None;
    }
    // Only a shared library counts: the executable's own entry may not be found by its program
    // headers' address (dladdr names it after argv[0]).
    let name = object_name(first)?;
    if !(name.ends_with(".so") || name.contains(".so.")) {
        return None;
    }
    Some(first)
}

/// What `dladdr` knows of the object that holds `addr`.
fn object_of(addr: usize) -> Option<libc::Dl_info> {
    // SAFETY: an all-zero Dl_info is a valid out-structure; dladdr accepts any address.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::dladdr(addr as *const c_void, &mut info) } != 0).then_some(info)
}

/// Whether two code addresses lie in the same loaded object.
fn same_object(a: usize, b: usize) -> bool {
    let base = |addr| object_of(addr).map(|i| i.dli_fbase as usize);
    matches!((base(a), base(b)), (Some(x), Some(y)) if x == y)
}

/// True once every symbol has been looked up; false on the resolving thread while it resolves.
#[inline]
fn ensure_resolved() -> bool {
    if STATE.load(Ordering::Acquire) == RESOLVED {
        return true;
    }
    resolve_slow()
}

#[cold]
fn resolve_slow() -> bool {
    if is_resolver() {
        return false;
    }
    match STATE.compare_exchange(UNRESOLVED, RESOLVING, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            RESOLVER.store(crate::sys::gettid(), Ordering::Release);
            for version in [c"GLIBC_2.34", c"GLIBC_2.2.5"] {
                // SAFETY: RTLD_NEXT is a valid pseudo-handle; both strings are NUL-terminated.
                let p =
                    unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
                if !p.is_null() {
                    REAL_DLSYM.store(p as usize, Ordering::Relaxed);
                    break;
                }
                forget_failure();
            }
            let heap_handle = heap_handle();
            for sym in ALL {
                let handle = if HEAP_NAMES.contains(&sym.name) {
                    heap_handle
                } else {
                    libc::RTLD_NEXT
                };
                let mut p = dlsym(handle, sym.name);
                if handle == libc::RTLD_DEFAULT
                    && same_object(p as usize, resolve_slow as fn() -> bool as usize)
                {
                    // The allocator ahead lacks this one (malloc_usable_size): glibc's serves.
                    p = std::ptr::null_mut();
                }
                sym.addr.store(p as usize, Ordering::Relaxed);
            }
            RESOLVER.store(0, Ordering::Release);
            STATE.store(RESOLVED, Ordering::Release);
            true
        }
        Err(_) => {
            // Another thread is resolving; it finishes in microseconds.
            while STATE.load(Ordering::Acquire) != RESOLVED {
                std::hint::spin_loop();
            }
            true
        }
    }
}

/// The path the loader gave the shim's own file.
pub fn own_path() -> Option<String> {
    object_name(own_path as fn() -> Option<String> as usize as *mut c_void)
}

/// The shim's own definition of `name` (a hook): not what the name means in the shim's own code,
/// which reaches a preemptible exported symbol through the global scope (the C library's, when the
/// shim was loaded late). Looked up in the scope of the shim's own handle, which starts at the shim.
pub fn own_definition(name: &CStr) -> Option<usize> {
    let info = object_of(own_definition as fn(&CStr) -> Option<usize> as usize)?;
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is the loader's NUL-terminated path of the shim, loaded now; RTLD_NOLOAD
    // only takes a reference to it.
    let handle = unsafe { libc::dlopen(info.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        forget_failure();
        return None;
    }
    let p = dlsym(handle, name) as usize;
    (p != 0 && object_of(p).is_some_and(|i| i.dli_fbase == info.dli_fbase)).then_some(p)
}

/// The address a hook of `name` forwards to (`mmap64` is glibc's other name for `mmap`); `None`
/// when it was not found.
pub fn forwarded_to(name: &CStr) -> Option<usize> {
    let name = if name == c"mmap64" { c"mmap" } else { name };
    ALL.iter().find(|s| s.name == name).and_then(|s| s.get())
}

/// The path of the object that defines the `malloc` the program's calls reach, when it is not the
/// shim: an allocator preloaded before it (jemalloc, tcmalloc), whose heap calls never reach the
/// shim's hooks.
pub fn foreign_malloc() -> Option<String> {
    let p = allocator_before_the_shim()?;
    object_name(p).or_else(|| Some("another library".into()))
}

/// The path of the loaded object that holds `p`.
fn object_name(p: *mut c_void) -> Option<String> {
    let info = object_of(p as usize).filter(|i| !i.dli_fname.is_null())?;
    // SAFETY: dladdr's dli_fname is a NUL-terminated path owned by the loader.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// `dlopen`: how the shim opens a library of its own (libunwind, NVML, CUPTI) or takes a reference
/// to one already loaded (`RTLD_NOLOAD`: libcuda, libpython, libtorch). Null when it cannot.
pub fn dlopen(path: &CStr, flags: c_int) -> *mut c_void {
    // SAFETY: `path` is NUL-terminated; dlopen has no other precondition (what a library's
    // constructors do when it is loaded is the library's, as for any dlopen).
    let h = unsafe { libc::dlopen(path.as_ptr(), flags) };
    if h.is_null() {
        forget_failure();
    }
    h
}

/// glibc's `dlsym`, called from inside the shim (so `RTLD_NEXT` means "after libmemshim").
pub fn dlsym(handle: *mut c_void, name: &CStr) -> *mut c_void {
    let p = real_dlsym_raw(handle, name.as_ptr());
    if p.is_null() {
        forget_failure();
    }
    p
}

/// Clears the loader's error state after one of the shim's own lookups failed. The loader keeps the
/// last failure per thread until `dlerror` is called, so the message the shim's probing left (a
/// Python function looked up in a process without Python, a library that is not installed) was what
/// the program's first `dlerror()` returned, after its own calls had all succeeded; and the program's
/// next dl call freed that message, a block the trace never saw allocated. The first `dlerror` hands
/// the message out (glibc formats it, an allocation), the second frees it; the guard keeps both out
/// of the trace. Not for the program's own calls (the `dlsym` export): their errors are the program's.
fn forget_failure() {
    let _inside = crate::record::guard::enter();
    // SAFETY: dlerror has no preconditions; the strings it returns are not used.
    unsafe {
        libc::dlerror();
        libc::dlerror();
    }
}

/// The function `name` of the library `handle` as a function pointer of type `F`; `None` when the
/// library lacks it.
///
/// # Safety
/// `F` must be a function pointer type with the C signature of that function.
pub unsafe fn function<F: Copy>(handle: *mut c_void, name: &CStr) -> Option<F> {
    let p = dlsym(handle, name);
    if p.is_null() || std::mem::size_of::<F>() != std::mem::size_of::<*mut c_void>() {
        return None;
    }
    // SAFETY: same size, and the caller vouches that `p` has type `F`.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// glibc's `dlsym` for a raw name pointer; null when it is not known yet.
pub fn real_dlsym_raw(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    let a = REAL_DLSYM.load(Ordering::Acquire);
    if a == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: REAL_DLSYM holds glibc's dlsym, found by dlvsym, whose signature this is.
    unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void>(
            a,
        )(handle, name)
    }
}

/// The address of glibc's `dlsym`, resolving first if needed (0 when unavailable).
pub fn real_dlsym_addr() -> usize {
    ensure_resolved();
    REAL_DLSYM.load(Ordering::Acquire)
}

/// Calls the symbol's function if it resolved, else `fallback`.
macro_rules! call {
    ($sym:expr, fn($($t:ty),* $(,)?) -> $r:ty, ($($a:expr),* $(,)?), $fallback:expr $(,)?) => {
        match $sym.get() {
            // SAFETY: the address was returned by dlsym for this very symbol, whose C signature is the
            // one named here (see the module's safety note).
            Some(a) => unsafe {
                std::mem::transmute::<usize, unsafe extern "C" fn($($t),*) -> $r>(a)($($a),*)
            },
            None => $fallback,
        }
    };
}

/// What a function the C library lacks returns: `-1` with `ENOSYS`.
pub(super) fn missing() -> c_int {
    set_errno(libc::ENOSYS);
    -1
}
