//! The two callbacks PyTorch's allocator calls, as libstdc++ `std::function` objects built by
//! hand, and what they record.
//!
//! # Safety
//! A libstdc++ `std::function<R(Args...)>` is 32 bytes: `_Any_data` (two words, where a small
//! functor lives), the manager `bool(_Any_data&, const _Any_data&, _Manager_operation)` and the
//! invoker `R(const _Any_data&, Args&&...)`: every argument reaches the invoker by reference, so the
//! trace tracker's invoker gets a `const TraceEntry*` and the out-of-memory observer's four
//! pointers to its integers. Our functor holds nothing, so the manager only answers "which type"
//! (none: null), "where is the functor" (in place) and copies the two words; destroying is a no-op.
//! The invokers read a `TraceEntry` only at offsets [`Layout`] gives for the release that was
//! checked, within its size. They run on PyTorch's threads with the allocator's per-device lock held
//! (the tracker) or just released (the observer), possibly holding the GIL: they take no lock, never
//! wait, allocate only inside the guard (straight to the real allocator) and contain every panic.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use memshim_trace::{Record, TorchAction, TorchEvent, TorchOom};

use super::layout::{action_index, Layout};
use crate::record::recorder::{record_guarded, send_stacked};
use crate::{channel, record::guard, sys::clock};

/// libstdc++'s `std::function`, as it lies in memory.
#[repr(C)]
pub struct StdFunction {
    storage: [usize; 2],
    manager: Option<Manager>,
    invoker: usize,
}

type Manager = unsafe extern "C" fn(*mut [usize; 2], *const [usize; 2], i32) -> bool;

/// `_Manager_operation`.
const GET_TYPE_INFO: i32 = 0;
const GET_FUNCTOR_PTR: i32 = 1;
const CLONE_FUNCTOR: i32 = 2;

unsafe extern "C" fn manager(dest: *mut [usize; 2], src: *const [usize; 2], op: i32) -> bool {
    // SAFETY: libstdc++ passes valid `_Any_data` for both (see the module note).
    unsafe {
        match op {
            GET_TYPE_INFO => (*dest)[0] = 0,
            GET_FUNCTOR_PTR => (*dest)[0] = src as usize,
            CLONE_FUNCTOR => *dest = *src,
            _ => {}
        }
    }
    false
}

impl StdFunction {
    fn new(invoker: usize) -> StdFunction {
        StdFunction {
            storage: [0; 2],
            manager: Some(manager),
            invoker,
        }
    }

    /// The trace tracker: `std::function<void(const TraceEntry&)>`.
    pub fn trace_tracker() -> StdFunction {
        StdFunction::new(on_trace_entry as *const () as usize)
    }

    /// The out-of-memory observer: `std::function<void(int64_t, size_t, size_t, size_t)>`.
    pub fn oom_observer() -> StdFunction {
        StdFunction::new(on_oom as *const () as usize)
    }
}

/// The layout the callbacks read, set once before they are attached (a `&'static Layout`).
static LAYOUT: AtomicUsize = AtomicUsize::new(0);
/// Set once the interpreter's shutdown was marked.
static EXITING: AtomicBool = AtomicBool::new(false);
/// The allocator object, for `cacheInfo` in the observer.
static ALLOCATOR: AtomicUsize = AtomicUsize::new(0);

/// Arms the callbacks for `allocator`, whose layout is `layout`. Called before attaching them.
pub fn arm(layout: &'static Layout, allocator: usize) {
    ALLOCATOR.store(allocator, Ordering::Release);
    LAYOUT.store(layout as *const Layout as usize, Ordering::Release);
}

fn layout() -> Option<&'static Layout> {
    let p = LAYOUT.load(Ordering::Acquire) as *const Layout;
    // SAFETY: LAYOUT is 0 or the address of a `&'static Layout` (see `arm`).
    unsafe { p.as_ref() }
}

/// Runs `f` inside the guard, errno kept and panics contained, if CUDA recording is on.
fn record(f: impl FnOnce()) {
    let Some(_g) = guard::enter() else { return };
    record_guarded(channel::cuda_active, f);
}

const ACTIONS: [TorchAction; 8] = [
    TorchAction::Alloc,
    TorchAction::FreeRequested,
    TorchAction::FreeCompleted,
    TorchAction::SegmentAlloc,
    TorchAction::SegmentFree,
    TorchAction::SegmentMap,
    TorchAction::SegmentUnmap,
    TorchAction::Oom,
];

unsafe extern "C" fn on_trace_entry(_functor: *const [usize; 2], entry: *const u8) {
    let Some(l) = layout() else { return };
    // SAFETY: `entry` is the `const TraceEntry&` of the checked release; every offset read lies
    // within `l.entry_size` (asserted by the layout's tests) and is aligned as the field is.
    let (raw, device, addr, stream, size) = unsafe {
        (
            (entry.add(l.action) as *const i32).read(),
            (entry.add(l.device) as *const i8).read(),
            (entry.add(l.addr) as *const u64).read(),
            (entry.add(l.stream) as *const u64).read(),
            (entry.add(l.size) as *const u64).read(),
        )
    };
    let Some(i) = action_index(l, raw) else {
        return;
    };
    let action = ACTIONS[i];
    // Frees carry no stack: the block's allocation has it.
    let with_stack = !matches!(
        action,
        TorchAction::FreeRequested
            | TorchAction::FreeCompleted
            | TorchAction::SegmentFree
            | TorchAction::SegmentUnmap
    );
    if !EXITING.load(Ordering::Relaxed) && crate::python::finalizing() {
        EXITING.store(true, Ordering::Relaxed);
        let mark = TorchEvent {
            action: TorchAction::PythonExit,
            device: device as i32,
            addr: 0,
            size: 0,
            stream: 0,
            stack: 0,
        };
        record(|| send_stacked(clock::monotonic_ns(), Record::Torch(mark), false));
    }
    let event = TorchEvent {
        action,
        device: device as i32,
        addr,
        size,
        stream,
        stack: 0,
    };
    record(|| send_stacked(clock::monotonic_ns(), Record::Torch(event), with_stack));
}

type CacheInfo = unsafe extern "C" fn(*mut c_void, i8, *mut usize);

/// The allocator's largest free cached block on `device`. `cacheInfo` starts from the value it is
/// given and asks the driver only when that is 0 (a driver error there would throw): 1 means "none".
fn largest_free(l: &Layout, device: i64) -> Option<u64> {
    let obj = ALLOCATOR.load(Ordering::Acquire) as *mut c_void;
    if obj.is_null() || !(0..=i8::MAX as i64).contains(&device) {
        return None;
    }
    let mut largest: usize = 1;
    // SAFETY: `obj` is the allocator whose virtual table was checked to be libc10_cuda's before the
    // observer was attached; slot `cache_info` is `cacheInfo` in the checked release. The
    // per-device lock it takes is recursive and, in the observer, released.
    unsafe {
        let vtable = *(obj as *const *const usize);
        let f: CacheInfo = std::mem::transmute::<usize, CacheInfo>(*vtable.add(l.cache_info));
        f(obj, device as i8, &mut largest);
    }
    (largest > 1).then_some(largest as u64)
}

unsafe extern "C" fn on_oom(
    _functor: *const [usize; 2],
    device: *const i64,
    requested: *const usize,
    total: *const usize,
    free: *const usize,
) {
    let Some(l) = layout() else { return };
    // SAFETY: the observer's four arguments arrive by reference (see the module note).
    let (device, requested, total, free) = unsafe { (*device, *requested, *total, *free) };
    let largest = catch_unwind(AssertUnwindSafe(|| {
        let _g = guard::enter();
        largest_free(l, device)
    }))
    .unwrap_or(None);
    let oom = TorchOom {
        device: device as i32,
        requested: requested as u64,
        device_total: total as u64,
        device_free: free as u64,
        largest_free: largest,
        stack: 0,
    };
    record(|| send_stacked(clock::monotonic_ns(), Record::TorchOom(Box::new(oom)), true));
}
