//! A wrapper's slot for the real driver function it calls: filled once, on first use or when the
//! wrapper is handed out (see `table`), and never with the shim's own code.
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::record::stacks;

/// The real function for a wrapper's slot; for `-lcuda` programs it is looked up on first use: in
/// the libraries after the shim, else in a driver loaded out of the global scope (libcudart loads
/// libcuda with `RTLD_LOCAL`, and a driver may call its own exports through the global scope, which
/// reaches the shim's wrapper first).
#[inline]
pub fn real_for(slot: &AtomicUsize, export_nul: &str) -> Option<usize> {
    match slot.load(Ordering::Acquire) {
        0 => {
            let name = CStr::from_bytes_with_nul(export_nul.as_bytes()).ok()?;
            let p = super::driver::lookup(name).unwrap_or(0);
            claim(slot, p).then_some(p)
        }
        a => Some(a),
    }
}

/// Stores `p` in `slot` unless it is null, the shim's own code, or a different pointer is there.
pub fn claim(slot: &AtomicUsize, p: usize) -> bool {
    if p == 0 || stacks::in_self(p) {
        return false;
    }
    match slot.compare_exchange(0, p, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => true,
        Err(existing) => existing == p,
    }
}
