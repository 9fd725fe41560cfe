//! Finding and loading CUPTI (`libcupti.so`), for the unified-memory counters (`cupti`) and for the
//! driver-API callbacks of an attached shim (`attached`): a CUPTI the process has loaded already
//! first (a second copy of CUPTI in one process would be a second, confused profiler), then
//! `MEMSHIM_CUPTI_LIB`, then beside the CUDA libraries the process has loaded (a pip-installed
//! PyTorch keeps CUPTI in its own `nvidia/` directories, out of the loader's path), then the loader's
//! path and the CUDA toolkit's usual homes. Never loads anything but CUPTI, and keeps it out of the
//! shim's import-table rewriting (see `attach::got::keep_out`).
//!
//! # Safety
//! Exports are looked up by name in the library loaded here and transmuted to the signature the
//! caller names, which must be that export's in `cupti.h` (see `required`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr, CString};

use crate::sys::real;

/// `cuptiGetResultString`.
pub type ResultStringFn = unsafe extern "C" fn(i32, *mut *const c_char) -> i32;

/// `CUPTI_SUCCESS`.
pub const CUPTI_SUCCESS: i32 = 0;

/// Where CUPTI is looked for last: the loader's path, then the CUDA toolkit's usual homes.
const CANDIDATES: &[&str] = &[
    "libcupti.so.13",
    "libcupti.so.12",
    "libcupti.so",
    "/usr/local/cuda/lib64/libcupti.so",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
];

/// A loaded CUPTI: its handle, the path it was loaded by, and its result names.
pub struct Cupti {
    pub handle: *mut c_void,
    pub path: String,
    text: Option<ResultStringFn>,
}

/// Loads CUPTI (see the module note), or says why it could not.
pub fn open(lib: Option<&str>) -> Result<Cupti, String> {
    let modules = crate::probes::modules::scan("");
    let file = |path: &str| path.rsplit('/').next().unwrap_or(path).to_string();
    let loaded = modules
        .iter()
        .map(|m| m.path.as_str())
        .find(|p| file(p).starts_with("libcupti.so"));
    let explicit = lib.filter(|p| !p.is_empty());
    if let Some(path) = loaded {
        return load(path)
            .ok_or_else(|| format!("cannot open the CUPTI the process loaded, {path}"));
    }
    if let Some(path) = explicit {
        return load(path).ok_or_else(|| format!("cannot load MEMSHIM_CUPTI_LIB={path}"));
    }
    let beside = modules
        .iter()
        .map(|m| m.path.as_str())
        .filter(|p| {
            let f = file(p);
            f.starts_with("libcudart.so") || f.starts_with("libcublas.so")
        })
        .filter_map(|p| p.rsplit_once('/').map(|(dir, _)| dir.to_string()))
        .flat_map(|dir| {
            // The directory itself (a toolkit, or CUDA 13's merged `nvidia/cu13/lib`), and the
            // per-library packages of older pip layouts (`nvidia/cuda_runtime/lib` beside
            // `nvidia/cuda_cupti/lib`).
            let sibling = format!("{dir}/../../cuda_cupti/lib");
            [dir, sibling].into_iter().flat_map(|d| {
                ["libcupti.so.13", "libcupti.so.12", "libcupti.so"].map(|f| format!("{d}/{f}"))
            })
        })
        .collect::<Vec<_>>();
    beside
        .iter()
        .map(String::as_str)
        .chain(CANDIDATES.iter().copied())
        .find_map(load)
        .ok_or_else(|| {
            "libcupti.so was not found (set MEMSHIM_CUPTI_LIB to its path, e.g. /usr/local/cuda/extras/CUPTI/lib64/libcupti.so)"
                .to_string()
        })
}

fn load(path: &str) -> Option<Cupti> {
    let c = CString::new(path).ok()?;
    // RTLD_LOCAL keeps CUPTI's symbols out of the program's way.
    let handle = real::dlopen(&c, libc::RTLD_NOW | libc::RTLD_LOCAL);
    if handle.is_null() {
        return None;
    }
    crate::attach::got::keep_out(handle);
    // SAFETY: cuptiGetResultString's signature.
    let text = unsafe { real::function::<ResultStringFn>(handle, c"cuptiGetResultString") };
    Some(Cupti {
        handle,
        path: path.to_string(),
        text,
    })
}

impl Cupti {
    /// A CUPTI export memshim cannot do without, or what to say when this CUPTI lacks it.
    ///
    /// # Safety
    /// As for `real::function`: `F` is that export's C signature.
    pub unsafe fn required<F: Copy>(&self, name: &CStr) -> Result<F, String> {
        // SAFETY: passed on from the caller.
        unsafe { real::function(self.handle, name) }
            .ok_or_else(|| format!("{} has no {}", self.path, name.to_string_lossy()))
    }

    /// An optional export.
    ///
    /// # Safety
    /// As for `required`.
    pub unsafe fn optional<F: Copy>(&self, name: &CStr) -> Option<F> {
        // SAFETY: passed on from the caller.
        unsafe { real::function(self.handle, name) }
    }

    /// CUPTI's name for result `r` (`CUPTI_ERROR_...`), or its number.
    pub fn result_name(&self, r: i32) -> String {
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; CUPTI returns a static string.
        match self.text.map(|f| unsafe { f(r, &mut s) }) {
            Some(CUPTI_SUCCESS) if !s.is_null() => {
                // SAFETY: non-null, NUL-terminated, static.
                unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
            }
            _ => format!("error {r}"),
        }
    }

    /// "`call` failed: CUPTI_ERROR_..."
    pub fn failed(&self, call: &str, r: i32) -> String {
        format!("{call} failed: {}", self.result_name(r))
    }
}
