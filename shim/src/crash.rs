//! The last moment before a crash or a terminating signal: when a signal whose default action ends
//! the process arrives and the program has no handler of its own for it, the shim's handler has the
//! writer put everything recorded so far on disk, with an end record that names the signal, then
//! lets the signal take its default action (same death, same exit status, same core dump).
//!
//! Handlers are installed at start only where the disposition is the default, and the shim steps
//! aside as soon as the program sets its own (the `sigaction`/`signal` hooks): the program's handler
//! then runs exactly as it would have, and a query of the disposition answers as if the shim were
//! not there (the default, while the shim's handler stands in for it).
//!
//! # Safety
//! The handler does only async-signal-safe things: atomic loads and stores, `nanosleep` while it
//! waits (with a deadline) for the writer thread, `sigaction` to restore the default, and `tgkill`
//! to send the signal again. It skips the flush when the signal arrived while the thread was inside
//! the shim (its state may be half-changed there). `sigaction` structures are zeroed C structs
//! filled field by field; pointers passed to the real `sigaction` come from the caller or our stack.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The signals handled: crashes, then the terminating signals a job is stopped with.
const SIGNALS: [i32; 9] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGABRT,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// Bit `n`: the shim's handler stands in for the default action of signal `n`.
static OURS: AtomicU64 = AtomicU64::new(0);

fn bit(sig: i32) -> u64 {
    if (1..64).contains(&sig) {
        1 << sig
    } else {
        0
    }
}

/// Whether the shim's handler stands for `sig`.
pub fn handles(sig: i32) -> bool {
    OURS.load(Ordering::Acquire) & bit(sig) != 0
}

/// Whether the shim would stand in for `sig`'s default action (one of [`SIGNALS`], in a process
/// where handlers were installed): a program that sets the default back, often from its own handler
/// just before it raises the signal again to die of it, gets the shim's handler in its place.
pub fn watches(sig: i32) -> bool {
    INSTALLED.load(Ordering::Acquire) && SIGNALS.contains(&sig)
}

/// Set once `install` has run.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The program is setting its own disposition for `sig`: the shim's handler is no longer there.
pub fn step_aside(sig: i32) {
    OURS.fetch_and(!bit(sig), Ordering::AcqRel);
}

/// What a query of each signal's disposition must answer while the shim's handler stands in for its
/// default: the default exactly as the kernel held it (flags and mask included) when the shim took
/// its place, or as the program last set it. Guarded by `VIEWS_BUSY` (tried, never waited on: a
/// signal handler may call `sigaction` on a thread that is inside it).
struct Views(UnsafeCell<[libc::sigaction; 64]>);
// SAFETY: every access holds VIEWS_BUSY.
unsafe impl Sync for Views {}
// SAFETY: an all-zero sigaction is a valid value (SIG_DFL, empty mask, no flags).
static VIEWS: Views = Views(UnsafeCell::new(unsafe { std::mem::zeroed() }));
static VIEWS_BUSY: AtomicBool = AtomicBool::new(false);

fn with_views<T>(f: impl FnOnce(&mut [libc::sigaction; 64]) -> T) -> Option<T> {
    if VIEWS_BUSY.swap(true, Ordering::Acquire) {
        return None;
    }
    // SAFETY: VIEWS_BUSY is held, so this is the only reference.
    let out = f(unsafe { &mut *VIEWS.0.get() });
    VIEWS_BUSY.store(false, Ordering::Release);
    Some(out)
}

/// Puts the shim's handler in place of `sig`'s default action.
fn take_over(sig: i32) -> bool {
    // SAFETY: a zeroed sigaction is valid; the real sigaction reads it.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler as *const () as usize;
        // On the program's alternate stack if it has one (a stack overflow needs it), and with
        // every signal blocked while the trace is written.
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigfillset(&mut act.sa_mask);
        OURS.fetch_or(bit(sig), Ordering::AcqRel);
        if crate::sys::real::sigaction(sig, &act, std::ptr::null_mut()) != 0 {
            step_aside(sig);
            return false;
        }
    }
    true
}

/// The disposition the kernel holds for `sig` now.
fn query(sig: i32) -> Option<libc::sigaction> {
    // SAFETY: a zeroed sigaction is a valid out-buffer for the real sigaction.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        (crate::sys::real::sigaction(sig, std::ptr::null(), &mut now) == 0).then_some(now)
    }
}

/// Installs the handler for every signal of [`SIGNALS`] that still has its default action.
pub fn install() {
    INSTALLED.store(true, Ordering::Release);
    crate::alt_stack::init_main();
    for sig in SIGNALS {
        let Some(now) = query(sig).filter(|a| a.sa_sigaction == libc::SIG_DFL) else {
            continue;
        };
        if with_views(|v| v[sig as usize] = now).is_some() {
            take_over(sig);
        }
    }
}

/// Writes the disposition the program would see for a signal the shim stands in for.
///
/// # Safety
/// `old` is null or valid for a write of a `sigaction`.
pub unsafe fn report_view(sig: i32, old: *mut libc::sigaction) {
    if old.is_null() || !(1..64).contains(&sig) {
        return;
    }
    // SAFETY: an all-zero sigaction is the default.
    let view = with_views(|v| v[sig as usize]).unwrap_or(unsafe { std::mem::zeroed() });
    // SAFETY: the caller vouches for `old`.
    unsafe { old.write(view) };
}

/// The program sets `sig` back to its default action (by `sigaction` or `signal`, through `set`)
/// while the shim's handler stands in for it: the call is made for real, so that what a later
/// query answers is exactly what the kernel would hold, then the handler takes the default's place
/// again. Returns what `set` returned.
pub fn set_default_keeping_handler<T>(sig: i32, set: impl FnOnce() -> T) -> T {
    let out = set();
    if let Some(now) = query(sig).filter(|a| a.sa_sigaction == libc::SIG_DFL) {
        if with_views(|v| v[sig as usize] = now).is_some() {
            take_over(sig);
        }
    }
    out
}

/// Whether the trace can be ended from this handler. Not when the shim's per-thread state cannot be
/// read here (see `guard::signal_safe`: the trace then ends as a killed process's, at most 100 ms
/// short), nor when the signal came while the thread was inside the shim (its state there may be
/// half-changed), unless it is a stack overflow and the thread holds nothing the writer needs (the
/// shim's heap lock): a thread that overflows while it allocates in every frame is in a hook half
/// the time, and its last moments were lost.
fn can_end_here(sig: i32, info: *const libc::siginfo_t) -> bool {
    if !handles(sig) || !crate::record::guard::signal_safe() {
        return false;
    }
    if !crate::record::guard::inside() {
        return true;
    }
    if sig != libc::SIGSEGV || info.is_null() || crate::sys::own_heap::held_here() {
        return false;
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; for SIGSEGV si_addr is
    // the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    // The fault lies in the guard area just below the stack the thread had (glibc's guard page and
    // the kernel's stack gap for the main thread).
    crate::record::guard::known_stack_low()
        .is_some_and(|low| addr < low + 4096 && addr + (1 << 20) >= low)
}

extern "C" fn handler(sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let saved = crate::sys::errno();
    if can_end_here(sig, info) {
        crate::channel::end_on_signal(sig);
    }
    step_aside(sig);
    // SAFETY: restoring the default with a zeroed (SIG_DFL) action, then sending the signal to this
    // very thread: it is blocked until the handler returns, and then takes its default action (a
    // fault that was the cause would also recur on return, to the same end).
    unsafe {
        let dfl: libc::sigaction = std::mem::zeroed();
        crate::sys::real::sigaction(sig, &dfl, std::ptr::null_mut());
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            libc::syscall(libc::SYS_gettid),
            sig,
        );
    }
    crate::sys::set_errno(saved);
}
