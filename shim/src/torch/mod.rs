//! PyTorch's CUDA caching allocator, from the inside: once `libc10_cuda.so` is loaded and its
//! allocator initialised, attach a trace tracker and an out-of-memory observer through the
//! allocator's own virtual functions, so every block and segment it hands out or takes back, and
//! every out-of-memory error, is recorded with the calling thread's stack (Python frames first).
//! The program is not changed and nothing is imported into it.
//!
//! When: at the driver allocations the shim records (`cuda::record::alloc`). The allocator asks the
//! driver for its first segment before it hands out its first block, so attaching there, on the
//! thread that is about to hand it out, misses nothing. One thread tries at a time; the others go
//! on without waiting (the one trying may hold another device's allocator lock).
//!
//! It must never: touch a release whose layout was not checked (see `layout`), or an allocator whose
//! virtual table is not inside `libc10_cuda.so`, or any backend but the native one (the
//! `cudaMallocAsync` backend's tensors are driver allocations already, each recorded with its stack).
//! Whatever it decides, it records a [`TorchState`] saying so.
//!
//! # Safety
//! The allocator pointer is read from the exported `std::atomic<CUDAAllocator*>` of the library
//! found loaded (kept loaded by our own `dlopen` reference). Before any call, its virtual table and
//! every slot used are checked to lie inside that library's loaded segments (data and code
//! respectively). The calls follow the Itanium C++ ABI on x86-64 only: `this` first; a
//! `std::string` is returned through a hidden pointer passed before `this`; a `std::function`
//! argument (not trivially copyable) is passed by the address of a temporary the caller owns.
#![allow(unsafe_code)]

mod callbacks;
mod layout;

use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use memshim_trace::{Record, Segment, TorchState};

use crate::record::msg::Msg;
use crate::{channel, probes::modules};

const IDLE: u8 = 0;
const BUSY: u8 = 1;
const DONE: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(IDLE);
/// The loader's (loads, unloads) when libc10_cuda.so was last looked for and not found.
static SEARCHED_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// True once the allocator's layer was decided (on, or off with the reason recorded).
pub fn decided() -> bool {
    STATE.load(Ordering::Acquire) == DONE
}

/// Called after each driver allocation the shim records, with the guard held.
pub fn on_driver_alloc() {
    if STATE.load(Ordering::Relaxed) == DONE {
        return;
    }
    if STATE
        .compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    let next = match attempt() {
        Attempt::Later => IDLE,
        Attempt::Decided(state) => {
            if !state.enabled && !state.version.is_empty() {
                channel::warn(&format!("PyTorch's allocator: {}", state.detail));
            }
            channel::send(Msg::Record(Record::TorchState(Box::new(state))));
            DONE
        }
    };
    STATE.store(next, Ordering::Release);
}

enum Attempt {
    /// Not loaded or not initialised yet.
    Later,
    Decided(TorchState),
}

fn off(version: &str, backend: &str, why: String) -> Attempt {
    Attempt::Decided(TorchState {
        enabled: false,
        version: version.to_string(),
        backend: backend.to_string(),
        detail: why,
    })
}

fn attempt() -> Attempt {
    let (adds, subs) = modules::counters();
    let stamp = adds.wrapping_mul(1 << 20).wrapping_add(subs);
    if SEARCHED_AT.load(Ordering::Relaxed) == stamp {
        return Attempt::Later;
    }
    let Some(lib) = modules::scan("")
        .into_iter()
        .find(|m| m.path.ends_with("/libc10_cuda.so"))
    else {
        SEARCHED_AT.store(stamp, Ordering::Relaxed);
        return Attempt::Later;
    };
    if channel::config().is_some_and(|c| !c.torch) {
        return off(
            "",
            "",
            "driver level only, because MEMSHIM_TORCH=0 turned it off".into(),
        );
    }
    let version_py = match lib.path.rfind("/lib/") {
        Some(i) => format!("{}/version.py", &lib.path[..i]),
        None => return off("", "", format!("driver level only, because {} is not inside a torch package (no torch/version.py beside it)", lib.path)),
    };
    let text = match std::fs::read_to_string(&version_py) {
        Ok(t) => t,
        Err(e) => return off("", "", format!("driver level only, because PyTorch's version could not be read from {version_py}: {e}")),
    };
    let Some(version) = layout::version_string(&text).map(str::to_string) else {
        return off(
            "",
            "",
            format!("driver level only, because {version_py} names no __version__"),
        );
    };
    let Some(layout) = layout::major_minor(&version).and_then(layout::known) else {
        return off(&version, "", format!(
            "driver level only, because PyTorch {version}'s allocator layout is not one this memshim has checked (it knows {})",
            layout::known_names()
        ));
    };
    if !cfg!(target_arch = "x86_64") {
        return off(
            &version,
            "",
            "driver level only, because the allocator's layout was checked on x86-64 only".into(),
        );
    }
    // The layouts live in a static table, so a 'static copy is one leak per process.
    let layout: &'static layout::Layout = Box::leak(Box::new(layout));
    install(&lib.path, &lib.segments, &version, layout)
}

fn inside(segments: &[Segment], addr: usize, len: usize, exec: bool) -> bool {
    segments.iter().any(|s| {
        s.exec == exec
            && addr as u64 >= s.start
            && (addr as u64).saturating_add(len as u64) <= s.start + s.len
    })
}

fn install(path: &str, segments: &[Segment], version: &str, l: &'static layout::Layout) -> Attempt {
    let Ok(cpath) = CString::new(path) else {
        return off(
            version,
            "",
            format!("driver level only, because the path {path} holds a NUL"),
        );
    };
    // RTLD_NOLOAD only finds a library already loaded; the reference we take keeps it
    // loaded for as long as our callbacks live inside its allocator.
    let handle = crate::sys::real::dlopen(&cpath, libc::RTLD_NOLOAD | libc::RTLD_LAZY);
    if handle.is_null() {
        return Attempt::Later;
    }
    let slot = crate::sys::real::dlsym(handle, layout::ALLOCATOR_SYMBOL) as usize;
    if slot == 0 || !inside(segments, slot, 8, false) {
        return off(version, "", format!("driver level only, because {path} exports no c10::cuda::CUDACachingAllocator::allocator"));
    }
    // SAFETY: `slot` is the exported std::atomic<CUDAAllocator*> (one aligned word, checked inside
    // the library's data).
    let obj = unsafe { (*(slot as *const AtomicU64)).load(Ordering::Acquire) } as usize;
    if obj == 0 {
        return Attempt::Later;
    }
    // SAFETY: a non-null allocator pointer points to a live object whose first word is its vtable
    // pointer (the object is static in libc10_cuda.so or on the heap, never freed).
    let vtable = unsafe { *(obj as *const usize) };
    let top = [
        l.initialized,
        l.cache_info,
        l.attach_oom_observer,
        l.attach_trace_tracker,
        l.name,
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    if !inside(segments, vtable, (top + 1) * 8, false) {
        return off(version, "", format!("driver level only, because the allocator's virtual table is not inside {path} (another allocator was plugged in)"));
    }
    let entry = |i: usize| -> usize {
        // SAFETY: slot i < top + 1 lies inside the checked range of the vtable.
        unsafe { *((vtable + i * 8) as *const usize) }
    };
    let slots = [
        l.initialized,
        l.cache_info,
        l.attach_oom_observer,
        l.attach_trace_tracker,
        l.name,
    ];
    if slots.iter().any(|&i| !inside(segments, entry(i), 1, true)) {
        return off(version, "", format!("driver level only, because the allocator's virtual functions are not {path}'s code"));
    }
    type Initialized = unsafe extern "C" fn(usize) -> bool;
    type Name = unsafe extern "C" fn(*mut [usize; 4], usize) -> *mut c_void;
    type Attach = unsafe extern "C" fn(usize, *mut callbacks::StdFunction);
    // SAFETY: each slot was checked to be code of libc10_cuda.so in the release whose layout `l`
    // is; the signatures are those of the module note.
    let initialized: Initialized =
        unsafe { std::mem::transmute::<usize, Initialized>(entry(l.initialized)) };
    // SAFETY: `initialized` is the allocator's `bool initialized()`, `obj` its `this`.
    if !unsafe { initialized(obj) } {
        return Attempt::Later;
    }
    // SAFETY: as for `initialized`: the slot of `std::string name()`.
    let name_fn: Name = unsafe { std::mem::transmute::<usize, Name>(entry(l.name)) };
    let mut s = [0usize; 4];
    // SAFETY: see above; `s` is a std::string's 32 bytes for the callee to construct.
    unsafe { name_fn(&mut s, obj) };
    let backend = read_string(&s);
    if backend != "native" {
        let why = if backend == "cudaMallocAsync" {
            "driver level: the cudaMallocAsync backend gives each tensor its own driver allocation (cuMemAllocAsync), recorded with its stack".to_string()
        } else {
            format!("driver level only, because the allocator backend is {backend:?}, not the native one")
        };
        return off(version, &backend, why);
    }
    callbacks::arm(l, obj);
    // SAFETY: as for `initialized`: the slots of the two attach functions.
    let attach_oom: Attach =
        unsafe { std::mem::transmute::<usize, Attach>(entry(l.attach_oom_observer)) };
    // SAFETY: as above.
    let attach_tracker: Attach =
        unsafe { std::mem::transmute::<usize, Attach>(entry(l.attach_trace_tracker)) };
    let mut observer = callbacks::StdFunction::oom_observer();
    let mut tracker = callbacks::StdFunction::trace_tracker();
    // SAFETY: see above; both temporaries outlive the calls, and destroying what is left of them
    // (moved from or not) is a no-op for our manager.
    unsafe {
        attach_oom(obj, &mut observer);
        attach_tracker(obj, &mut tracker);
    }
    Attempt::Decided(TorchState {
        enabled: true,
        version: version.to_string(),
        backend,
        detail: "blocks, segments and out-of-memory errors recorded from the allocator's trace tracker and out-of-memory observer".to_string(),
    })
}

/// A libstdc++ `std::string` (pointer, length, capacity or inline buffer) as text. One that is not
/// in its inline buffer is left to leak (a few bytes, once).
fn read_string(s: &[usize; 4]) -> String {
    let (ptr, len) = (s[0] as *const u8, s[1]);
    if ptr.is_null() || len > 256 {
        return String::new();
    }
    // SAFETY: a constructed std::string's pointer holds `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    String::from_utf8_lossy(bytes).into_owned()
}
