//! The real functions behind every hook, and the bootstrap that finds them.
//!
//! # Safety
//! Each hooked symbol is resolved once with `dlsym(RTLD_NEXT, name)`, so memshim sits in front of
//! whatever allocator comes next (glibc, or jemalloc/tcmalloc preloaded after us). `dlsym` itself may
//! call `calloc`/`malloc` while we resolve: those calls, made on the resolving thread, are served from a
//! static bootstrap arena, and `free` of an arena pointer is ignored. A resolved pointer is stored once
//! and never changes, and it always has the C signature of the symbol it names, which is what makes the
//! transmutes below sound. When a symbol cannot be found, glibc's `__libc_*` entry points stand in.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};

use crate::bootstrap;

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

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

fn is_resolver() -> bool {
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
    MMAP = c"mmap";
    MMAP64 = c"mmap64";
    MUNMAP = c"munmap";
    MREMAP = c"mremap";
    EXECVE = c"execve";
    EXECV = c"execv";
    EXECVP = c"execvp";
    EXECVPE = c"execvpe";
    FEXECVE = c"fexecve";
    DLCLOSE = c"dlclose";
    MBIND = c"mbind";
    SET_MEMPOLICY = c"set_mempolicy";
    MIGRATE_PAGES = c"migrate_pages";
    MOVE_PAGES = c"move_pages";
    SCHED_SETAFFINITY = c"sched_setaffinity";
    PTHREAD_SETAFFINITY_NP = c"pthread_setaffinity_np";
    UNDERSCORE_EXIT = c"_exit";
    UNDERSCORE_CAPITAL_EXIT = c"_Exit";
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
            }
            for sym in ALL {
                let p = dlsym(libc::RTLD_NEXT, sym.name);
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

/// glibc's `dlsym`, called from inside the shim (so `RTLD_NEXT` means "after libmemshim").
pub fn dlsym(handle: *mut c_void, name: &CStr) -> *mut c_void {
    real_dlsym_raw(handle, name.as_ptr())
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

/// The next `malloc`.
#[inline]
pub fn malloc(size: usize) -> *mut c_void {
    call!(
        MALLOC,
        fn(usize) -> *mut c_void,
        (size),
        boot_or(
            || {
                // SAFETY: glibc's own allocator entry point, valid to call at any time.
                unsafe { __libc_malloc(size) }
            },
            size,
            16
        )
    )
}

/// The next `calloc`.
#[inline]
pub fn calloc(n: usize, size: usize) -> *mut c_void {
    call!(CALLOC, fn(usize, usize) -> *mut c_void, (n, size), {
        match n.checked_mul(size) {
            None => std::ptr::null_mut(),
            // The bootstrap arena is zero-initialised and never reused, so it is already calloc'd.
            Some(total) => boot_or(
                || {
                    // SAFETY: glibc's own allocator entry point.
                    unsafe { __libc_calloc(n, size) }
                },
                total,
                16,
            ),
        }
    })
}

/// The next `realloc`. Bootstrap blocks are moved out of the arena.
#[inline]
pub fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if bootstrap::owns(p) {
        return bootstrap::move_out(p, size, malloc);
    }
    call!(REALLOC, fn(*mut c_void, usize) -> *mut c_void, (p, size), {
        // SAFETY: `p` came from the same allocator glibc's realloc serves.
        unsafe { __libc_realloc(p, size) }
    })
}

/// `reallocarray` as glibc defines it: `realloc` with an overflow check. Not forwarded to the next
/// `reallocarray`, because glibc's calls `realloc` through the PLT, which would land in the shim's
/// `realloc` hook and record the call twice.
#[inline]
pub fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        Some(total) => realloc(p, total),
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// The next `free`; arena blocks are never freed.
#[inline]
pub fn free(p: *mut c_void) {
    if bootstrap::owns(p) {
        return;
    }
    call!(FREE, fn(*mut c_void) -> (), (p), {
        // SAFETY: `p` came from glibc's allocator (no other was found).
        unsafe { __libc_free(p) }
    })
}

/// The next `posix_memalign`.
#[inline]
pub fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    call!(
        POSIX_MEMALIGN,
        fn(*mut *mut c_void, usize, usize) -> c_int,
        (out, align, size),
        {
            if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
                return libc::EINVAL;
            }
            let p = memalign(align, size);
            if p.is_null() {
                return libc::ENOMEM;
            }
            // SAFETY: the caller passes a valid out-pointer, as posix_memalign requires.
            unsafe { *out = p };
            0
        }
    )
}

/// The next `aligned_alloc`.
#[inline]
pub fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    call!(
        ALIGNED_ALLOC,
        fn(usize, usize) -> *mut c_void,
        (align, size),
        memalign(align, size)
    )
}

/// The next `memalign`.
#[inline]
pub fn memalign(align: usize, size: usize) -> *mut c_void {
    call!(
        MEMALIGN,
        fn(usize, usize) -> *mut c_void,
        (align, size),
        boot_or(
            || {
                // SAFETY: glibc's own allocator entry point.
                unsafe { __libc_memalign(align, size) }
            },
            size,
            align
        )
    )
}

/// The next `valloc`.
#[inline]
pub fn valloc(size: usize) -> *mut c_void {
    call!(
        VALLOC,
        fn(usize) -> *mut c_void,
        (size),
        memalign(page_size(), size)
    )
}

/// The next `pvalloc`.
#[inline]
pub fn pvalloc(size: usize) -> *mut c_void {
    let page = page_size();
    call!(PVALLOC, fn(usize) -> *mut c_void, (size), {
        memalign(page, size.div_ceil(page).max(1) * page)
    })
}

/// The next `mmap`.
#[inline]
pub fn mmap(
    a: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    call!(
        MMAP,
        fn(*mut c_void, usize, c_int, c_int, c_int, libc::off_t) -> *mut c_void,
        (a, len, prot, flags, fd, off),
        raw_mmap(a, len, prot, flags, fd, off)
    )
}

/// The next `mmap64` (the same function as `mmap` on 64-bit glibc).
#[inline]
pub fn mmap64(
    a: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    call!(
        MMAP64,
        fn(*mut c_void, usize, c_int, c_int, c_int, libc::off_t) -> *mut c_void,
        (a, len, prot, flags, fd, off),
        mmap(a, len, prot, flags, fd, off)
    )
}

fn raw_mmap(
    a: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    // SAFETY: the raw system call takes the caller's arguments unchanged, exactly as mmap would.
    unsafe { libc::syscall(libc::SYS_mmap, a, len, prot, flags, fd, off) as *mut c_void }
}

/// The next `munmap`.
#[inline]
pub fn munmap(a: *mut c_void, len: usize) -> c_int {
    call!(MUNMAP, fn(*mut c_void, usize) -> c_int, (a, len), {
        // SAFETY: the raw system call takes the caller's arguments unchanged.
        unsafe { libc::syscall(libc::SYS_munmap, a, len) as c_int }
    })
}

/// The next `mremap` (the variadic fifth argument is always passed; it is ignored without MREMAP_FIXED).
#[inline]
pub fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    call!(
        MREMAP,
        fn(*mut c_void, usize, usize, c_int, *mut c_void) -> *mut c_void,
        (old, old_len, new_len, flags, new_addr),
        {
            // SAFETY: the raw system call takes the caller's arguments unchanged.
            unsafe {
                libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr)
                    as *mut c_void
            }
        }
    )
}

type Argv = *const *const c_char;

/// The next `execve`.
pub fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    call!(
        EXECVE,
        fn(*const c_char, Argv, Argv) -> c_int,
        (path, argv, envp),
        missing()
    )
}
/// The next `execv`.
pub fn execv(path: *const c_char, argv: Argv) -> c_int {
    call!(
        EXECV,
        fn(*const c_char, Argv) -> c_int,
        (path, argv),
        missing()
    )
}
/// The next `execvp`.
pub fn execvp(file: *const c_char, argv: Argv) -> c_int {
    call!(
        EXECVP,
        fn(*const c_char, Argv) -> c_int,
        (file, argv),
        missing()
    )
}
/// The next `execvpe`.
pub fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    call!(
        EXECVPE,
        fn(*const c_char, Argv, Argv) -> c_int,
        (file, argv, envp),
        missing()
    )
}
/// The next `fexecve`.
pub fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    call!(
        FEXECVE,
        fn(c_int, Argv, Argv) -> c_int,
        (fd, argv, envp),
        missing()
    )
}

/// The next `dlclose`.
pub fn dlclose(handle: *mut c_void) -> c_int {
    call!(DLCLOSE, fn(*mut c_void) -> c_int, (handle), missing())
}

type Mask = *const std::ffi::c_ulong;

/// The next `mbind` (libnuma's).
pub fn mbind(
    a: *mut c_void,
    len: std::ffi::c_ulong,
    mode: c_int,
    mask: Mask,
    maxnode: std::ffi::c_ulong,
    flags: std::ffi::c_uint,
) -> std::ffi::c_long {
    call!(
        MBIND,
        fn(
            *mut c_void,
            std::ffi::c_ulong,
            c_int,
            Mask,
            std::ffi::c_ulong,
            std::ffi::c_uint,
        ) -> std::ffi::c_long,
        (a, len, mode, mask, maxnode, flags),
        missing() as std::ffi::c_long
    )
}
/// The next `set_mempolicy` (libnuma's).
pub fn set_mempolicy(mode: c_int, mask: Mask, maxnode: std::ffi::c_ulong) -> std::ffi::c_long {
    call!(
        SET_MEMPOLICY,
        fn(c_int, Mask, std::ffi::c_ulong) -> std::ffi::c_long,
        (mode, mask, maxnode),
        missing() as std::ffi::c_long
    )
}
/// The next `migrate_pages` (libnuma's).
pub fn migrate_pages(
    pid: c_int,
    maxnode: std::ffi::c_ulong,
    old: Mask,
    new: Mask,
) -> std::ffi::c_long {
    call!(
        MIGRATE_PAGES,
        fn(c_int, std::ffi::c_ulong, Mask, Mask) -> std::ffi::c_long,
        (pid, maxnode, old, new),
        missing() as std::ffi::c_long
    )
}
/// The next `move_pages` (libnuma's).
pub fn move_pages(
    pid: c_int,
    count: std::ffi::c_ulong,
    pages: *mut *mut c_void,
    nodes: *const c_int,
    status: *mut c_int,
    flags: c_int,
) -> std::ffi::c_long {
    call!(
        MOVE_PAGES,
        fn(
            c_int,
            std::ffi::c_ulong,
            *mut *mut c_void,
            *const c_int,
            *mut c_int,
            c_int,
        ) -> std::ffi::c_long,
        (pid, count, pages, nodes, status, flags),
        missing() as std::ffi::c_long
    )
}
/// The next `sched_setaffinity`.
pub fn sched_setaffinity(pid: libc::pid_t, size: usize, mask: *const libc::cpu_set_t) -> c_int {
    call!(
        SCHED_SETAFFINITY,
        fn(libc::pid_t, usize, *const libc::cpu_set_t) -> c_int,
        (pid, size, mask),
        missing()
    )
}
/// The next `pthread_setaffinity_np`.
pub fn pthread_setaffinity_np(
    t: libc::pthread_t,
    size: usize,
    mask: *const libc::cpu_set_t,
) -> c_int {
    call!(
        PTHREAD_SETAFFINITY_NP,
        fn(libc::pthread_t, usize, *const libc::cpu_set_t) -> c_int,
        (t, size, mask),
        libc::ENOSYS
    )
}

/// The next `_exit`; never returns.
pub fn underscore_exit(status: c_int) -> ! {
    if let Some(a) = UNDERSCORE_EXIT.get() {
        // SAFETY: resolved by dlsym for "_exit", which takes an int and does not return.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> !>(a)(status) }
    }
    // SAFETY: exit_group ends the process; nothing of ours runs after it.
    unsafe { libc::syscall(libc::SYS_exit_group, status) };
    unreachable!("exit_group returned")
}

/// The next `_Exit`; never returns.
pub fn underscore_capital_exit(status: c_int) -> ! {
    if let Some(a) = UNDERSCORE_CAPITAL_EXIT.get() {
        // SAFETY: resolved by dlsym for "_Exit", which takes an int and does not return.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> !>(a)(status) }
    }
    underscore_exit(status)
}

fn missing() -> c_int {
    set_errno(libc::ENOSYS);
    -1
}

fn boot_or(f: impl FnOnce() -> *mut c_void, size: usize, align: usize) -> *mut c_void {
    if is_resolver() {
        bootstrap::alloc(size, align)
    } else {
        f()
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}
