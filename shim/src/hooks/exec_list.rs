//! `execl`, `execlp` and `execle`: glibc builds their argument vector itself and calls its internal
//! `execve`, which no preloaded library can interpose, so without these hooks the trace would not be
//! closed before the image is replaced (losing what was not yet on disk, and reading as a crash).
//!
//! They are C-variadic, which stable Rust cannot define; on x86-64 a small naked entry point lays
//! the five register arguments after the path beside a pointer to the caller's stack arguments and
//! calls [`gather`], which walks them up to the terminating null and hands a plain vector to the
//! `execv` family's own hooks. Other architectures keep glibc's versions.
#![cfg(target_arch = "x86_64")]

use std::ffi::{c_char, c_int};

/// Lists up to this long are gathered on the stack; longer ones (rare: a list written out in C
/// source) in a block from the real allocator, freed if the exec fails.
const ON_STACK: usize = 255;

type Arg = *const c_char;

#[derive(Clone, Copy)]
#[repr(C)]
enum Kind {
    Path = 0,
    Search = 1,
    Env = 2,
}

/// Collects the listed arguments and runs the matching vector exec.
///
/// # Safety
/// `regs` points at the five register arguments that followed the path, `stack` at the caller's
/// stack arguments; together they form the C argument list, terminated by a null pointer (and, for
/// `execle`, followed by the environment), as the C contract of `execl` requires.
unsafe extern "C" fn gather(path: Arg, regs: *const Arg, stack: *const Arg, kind: Kind) -> c_int {
    // SAFETY: as the function's contract says, index `i` is within the caller's argument list
    // until its terminating null has been read.
    let nth = |i: usize| unsafe {
        if i < 5 {
            *regs.add(i)
        } else {
            *stack.add(i - 5)
        }
    };
    let mut n = 0;
    while !nth(n).is_null() {
        n += 1;
    }
    let mut local: [Arg; ON_STACK + 1] = [std::ptr::null(); ON_STACK + 1];
    let heap = if n > ON_STACK {
        let Some(bytes) = (n + 1).checked_mul(std::mem::size_of::<Arg>()) else {
            crate::sys::set_errno(libc::E2BIG);
            return -1;
        };
        let p = crate::sys::real::malloc(bytes) as *mut Arg;
        if p.is_null() {
            crate::sys::set_errno(libc::ENOMEM);
            return -1;
        }
        p
    } else {
        local.as_mut_ptr()
    };
    for i in 0..=n {
        // SAFETY: `heap` holds n + 1 slots (the stack array, or the block just allocated); slot n
        // gets the terminating null.
        unsafe { *heap.add(i) = if i < n { nth(i) } else { std::ptr::null() } };
    }
    let argv = heap as *const Arg;
    let r = match kind {
        Kind::Path => super::process::execv(path, argv),
        Kind::Search => super::process::execvp(path, argv),
        Kind::Env => super::process::execve(path, argv, nth(n + 1) as *const Arg),
    };
    if n > ON_STACK {
        let saved = crate::sys::errno();
        crate::sys::real::free(heap.cast());
        crate::sys::set_errno(saved);
    }
    r
}

/// The entry shared by the three: pushes the register arguments so they sit in order, points at the
/// stack arguments above the return address, and calls `gather` (the stack is 16-byte aligned at
/// the call: the caller's call pushed 8 bytes, the five pushes 40 more).
macro_rules! list_exec {
    ($name:ident, $kind:expr) => {
        #[doc = concat!("`", stringify!($name), "`.")]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() -> c_int {
            std::arch::naked_asm!(
                "push r9",
                "push r8",
                "push rcx",
                "push rdx",
                "push rsi",
                "mov rsi, rsp",
                "lea rdx, [rsp + 48]",
                "mov ecx, {kind}",
                "call {gather}",
                "add rsp, 40",
                "ret",
                kind = const $kind as u32,
                gather = sym gather,
            )
        }
    };
}

list_exec!(execl, Kind::Path);
list_exec!(execlp, Kind::Search);
list_exec!(execle, Kind::Env);
