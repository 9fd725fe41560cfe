//! A value leaked on purpose and reached through an atomic pointer: published once per trace, read
//! by any thread at any moment, never freed. A fork child forgets its parent's (whose locks may have
//! been held at fork) and publishes a fresh one.
//!
//! # Safety
//! The pointer is null or comes from `Box::into_raw` and is never freed, so a non-null load is a
//! valid `&'static T` for the rest of the process; `get` hands it out only for `T: Sync`.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicPtr, Ordering};

/// A leaked `T`, or none.
pub struct Leaked<T>(AtomicPtr<T>);

impl<T: Sync + 'static> Leaked<T> {
    /// None yet.
    pub const fn none() -> Self {
        Leaked(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// Leaks `value` and publishes it; one published before stays leaked.
    pub fn publish(&self, value: T) {
        self.0
            .store(Box::into_raw(Box::new(value)), Ordering::Release);
    }

    /// Readers see none from now on; the value stays leaked.
    pub fn forget(&self, order: Ordering) {
        self.0.store(std::ptr::null_mut(), order);
    }

    /// The published value, if any.
    #[inline]
    pub fn get(&self) -> Option<&'static T> {
        let p = self.0.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: see the module note: a non-null pointer is a leaked Box that is never freed.
        Some(unsafe { &*p })
    }
}
