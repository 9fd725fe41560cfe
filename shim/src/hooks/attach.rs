//! The entry points `memshim attach` calls inside the process it attached to, once it has made the
//! process `dlopen` the shim (see `crate::attach`).
use std::ffi::{c_char, c_int, CStr};

use crate::attach::{self, got::Target};
use crate::sys::real;

/// Starts tracing in a running process; `settings` is `NAME=value` lines (the shim's environment
/// settings). Returns one of `attach::code`.
///
/// # Safety
/// `settings` must be a NUL-terminated string (or null for none).
#[no_mangle]
pub unsafe extern "C" fn memshim_attach(settings: *const c_char) -> c_int {
    let text = if settings.is_null() {
        String::new()
    } else {
        // SAFETY: the caller passes a NUL-terminated string.
        unsafe { CStr::from_ptr(settings) }
            .to_string_lossy()
            .into_owned()
    };
    let own = memshim_attach as *const () as usize;
    crate::record::recorder::lifecycle(|| attach::attach(&text, attached_targets, own))
}

/// Puts back what `memshim_attach` redirected and closes the trace. Returns one of `attach::code`.
#[no_mangle]
pub extern "C" fn memshim_detach() -> c_int {
    crate::record::recorder::lifecycle(attach::detach)
}

/// The functions redirected, each with the hook that takes its calls and what that hook calls
/// (also for a library opened with `RTLD_DEEPBIND`, see `dlopen`).
pub(crate) fn targets() -> Vec<Target> {
    const NAMES: [&CStr; 14] = [
        c"malloc",
        c"calloc",
        c"realloc",
        c"reallocarray",
        c"free",
        c"posix_memalign",
        c"aligned_alloc",
        c"memalign",
        c"valloc",
        c"pvalloc",
        c"mmap",
        c"mmap64",
        c"munmap",
        c"mremap",
    ];
    NAMES
        .into_iter()
        .filter_map(|name| {
            let hook = real::own_definition(name)?;
            // The hook does not forward to the next reallocarray (see `real::reallocarray`), but the
            // slots hold the C library's.
            let real = if name == c"reallocarray" {
                Some(real::dlsym(libc::RTLD_NEXT, c"reallocarray") as usize).filter(|&a| a != 0)
            } else {
                real::forwarded_to(name)
            }?;
            Some(Target { name, hook, real })
        })
        .collect()
}

/// What attaching redirects: [`targets`], and `dlopen` and `dlsym` themselves, so that a library
/// the program opens later has its slots rewritten too (see `dlopen`).
pub(crate) fn attached_targets() -> Vec<Target> {
    let mut all = targets();
    let loader = [
        (c"dlopen", real::dlsym(libc::RTLD_NEXT, c"dlopen") as usize),
        (c"dlsym", real::real_dlsym_addr()),
    ];
    all.extend(loader.into_iter().filter_map(|(name, real)| {
        let hook = real::own_definition(name)?;
        (real != 0).then_some(Target { name, hook, real })
    }));
    all
}
