//! CUDA driver interception: every device, managed, pinned and virtual-memory allocation, whichever
//! path the program took to the driver.
//!
//! Programs reach the driver three ways, and all three end at the same wrappers (one per driver export,
//! in `api`), so each call is counted exactly once:
//! - by symbol (`-lcuda`): the wrappers are exported under the driver's own names;
//! - by `dlsym(handle, "cuMemAlloc_v2")`: the shim's `dlsym` (see `dlsym`) hands back the wrapper;
//! - by `cuGetProcAddress` (nvcc's static runtime, libcudart, PyTorch's driver entry points): the
//!   shim's `cuGetProcAddress*` wrappers swap the returned pointer for the wrapper, honouring the
//!   caller's `cudaVersion` and per-thread-stream `flags` (see `table`).
//!
//! The guard is held across the real driver call, so the driver's own mallocs and mmaps are not
//! reported as the program's. A process that never loads libcuda pays nothing.
/// Defines an exported driver wrapper named like the driver's export, with the slot for the real
/// function (`<name>::REAL`). The body runs with the guard held and `call()` makes the real call;
/// when the thread is already inside the shim the real call is made directly. With `unguarded`
/// the body always runs and takes no guard (it records nothing: see `lifecycle`).
macro_rules! wrapper {
    ($name:ident ( $($arg:ident : $ty:ty),* ) |$call:ident| $body:block) => {
        wrapper!(@define $name ($($arg: $ty),*) |$call| {
            let Some(_guard) = crate::record::guard::enter() else { return $call() };
            $body
        });
    };
    (unguarded $name:ident ( $($arg:ident : $ty:ty),* ) |$call:ident| $body:block) => {
        wrapper!(@define $name ($($arg: $ty),*) |$call| $body);
    };
    (@define $name:ident ( $($arg:ident : $ty:ty),* ) |$call:ident| $body:block) => {
        pub mod $name {
            //! The real function's slot.
            pub static REAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $crate::cuda::CUresult {
            let name = concat!(stringify!($name), "\0");
            let Some(real) = $crate::cuda::slot::real_for(&$name::REAL, name) else {
                return $crate::cuda::CUDA_ERROR_NOT_INITIALIZED;
            };
            // The real call's result, once made: a panic in the recording after it must not make
            // the call a second time (an allocation twice), and one before it must still make it.
            let made = std::cell::Cell::new(None);
            let real_call = || {
                // SAFETY: see the module note: `real` is this export's driver function.
                unsafe {
                    std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*) -> $crate::cuda::CUresult>(real)($($arg),*)
                }
            };
            let $call = || {
                let r = real_call();
                made.set(Some(r));
                r
            };
            let body = std::panic::AssertUnwindSafe(|| -> $crate::cuda::CUresult { $body });
            match std::panic::catch_unwind(body) {
                Ok(r) => r,
                Err(_) => {
                    $crate::channel::fail("internal error in a CUDA wrapper");
                    made.get().unwrap_or_else(real_call)
                }
            }
        }
    };
}

pub mod api;
pub mod attached;
pub mod copy;
pub mod cupti;
pub mod cupti_lib;
pub mod dlsym;
pub mod driver;
pub mod events;
pub mod lifecycle;
pub mod poller;
pub mod record;
pub mod shape;
pub mod slot;
pub mod table;

/// `CUresult`.
pub type CUresult = libc::c_int;
/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_NOT_INITIALIZED`, returned when the driver's function cannot be found.
pub const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
