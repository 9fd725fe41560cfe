//! Running totals of every host allocation and free, kept in the process for the thin sampling mode,
//! in which only the sampled allocations travel to the writer: what the totals, live bytes and leak
//! totals of the report come from there.
//!
//! Each thread counts in a slot of its own (a cache line in a static table), with plain loads and
//! stores: no read-modify-write, no line shared with another writer, so counting costs a few
//! nanoseconds. The sampler sums the slots. A thread's slot is handed back when it exits (a
//! thread-specific key's destructor) and the next thread continues its counts, so sums never lose
//! what an exited thread counted. Threads beyond the table's size share an overflow slot counted with
//! atomic adds. The slot also holds the thread's countdown to its next sampled allocation.
//!
//! Never: allocate, or block. The counts survive a fork (the child's first totals hold what it
//! inherited).
//!
//! # Safety
//! The slot index lives in a thread word (`sys::thread_words`) where the shim was preloaded, and in a
//! `pthread_getspecific` slot otherwise (see `guard` for why not through `__tls_get_addr`). The key
//! exists in both cases: its destructor is what hands the slot back. Values are plain integers (the
//! key's stored in the pointer): 0 (no slot yet), an index into `TABLE`, or `SLOTS` (the overflow).
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use memshim_trace::HeapTotals;

use crate::sys::thread_words as words;

/// Slots for threads (index 0 is the shared overflow slot).
const SLOTS: usize = 1024;
const OVERFLOW: usize = 0;
const NO_KEY: u32 = u32::MAX;

#[repr(align(64))]
struct Slot {
    owned: AtomicU32,
    allocations: AtomicU64,
    frees: AtomicU64,
    allocated_bytes: AtomicU64,
    allocated_usable: AtomicU64,
    freed_usable: AtomicU64,
    /// Usable bytes left before the thread's next sampled allocation (0: none drawn yet).
    countdown: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            owned: AtomicU32::new(0),
            allocations: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            allocated_bytes: AtomicU64::new(0),
            allocated_usable: AtomicU64::new(0),
            freed_usable: AtomicU64::new(0),
            countdown: AtomicU64::new(0),
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
static KEY: AtomicU32 = AtomicU32::new(NO_KEY);
/// One past the highest slot ever handed out: the sum reads no further.
static USED: AtomicUsize = AtomicUsize::new(1);

/// Creates the key once; returns false when the process has none left (counting is then off).
pub fn init() -> bool {
    if KEY.load(Ordering::Acquire) != NO_KEY {
        return true;
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a valid out-pointer; `release` only stores into the static table.
    if unsafe { libc::pthread_key_create(&mut key, Some(release)) } != 0 {
        return false;
    }
    KEY.store(key, Ordering::Release);
    true
}

/// The thread-exit destructor: hands the slot to the next thread that needs one. It runs on the
/// exiting thread, whose word must forget the slot too: a free the thread's last destructors make
/// would otherwise count into a slot another thread took meanwhile.
extern "C" fn release(value: *mut libc::c_void) {
    let i = value as usize;
    if words::fast() {
        words::set(words::THIN_SLOT, 0);
    }
    if i != OVERFLOW && i < SLOTS {
        TABLE[i].owned.store(0, Ordering::Release);
    }
}

/// Adds `by` to a counter of `slot`: a plain load and store on the owner's own slot.
#[inline(always)]
fn add(counter: &AtomicU64, by: u64, shared: bool) {
    if shared {
        counter.fetch_add(by, Ordering::Relaxed);
    } else {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(by),
            Ordering::Relaxed,
        );
    }
}

/// The calling thread's slot, and whether it is the shared one; `None` before `init`.
#[inline(always)]
fn slot() -> Option<(&'static Slot, bool)> {
    let key = KEY.load(Ordering::Relaxed);
    if key == NO_KEY {
        return None;
    }
    let mut i = words::get_or_key(words::THIN_SLOT, key);
    if i == 0 {
        i = claim();
        words::set_or_key(words::THIN_SLOT, key, i);
        if words::fast() {
            // SAFETY: `key` was created by `init` and is never deleted; the value is an integer,
            // never dereferenced, stored without allocating (keys below 32). The key holds the slot
            // with the fast words too: its destructor is what hands the slot back at the thread's
            // exit.
            unsafe { libc::pthread_setspecific(key, i as *const libc::c_void) };
        }
    }
    let i = if i >= SLOTS { OVERFLOW } else { i };
    Some((&TABLE[i], i == OVERFLOW))
}

/// Takes a free slot for the calling thread, or the overflow marker when the table is full.
#[cold]
fn claim() -> usize {
    for (i, s) in TABLE.iter().enumerate().skip(1) {
        if s.owned.load(Ordering::Relaxed) == 0
            && s.owned
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            USED.fetch_max(i + 1, Ordering::Release);
            // The counts carry on; the countdown is the new thread's own.
            s.countdown.store(0, Ordering::Relaxed);
            return i;
        }
    }
    SLOTS
}

/// Counts an allocation of `size` bytes asked for, `usable` bytes given, and counts its usable
/// bytes down to the thread's next sample: true when this allocation is the sampled one (the
/// countdown crossed zero; the next is drawn by `draw`). Threads in the shared slot share a
/// countdown too, read and written without a read-modify-write: a race there only moves a sample.
#[inline(always)]
pub fn alloc(size: u64, usable: u64, draw: impl Fn() -> u64) -> bool {
    let Some((s, shared)) = slot() else {
        return false;
    };
    add(&s.allocations, 1, shared);
    add(&s.allocated_bytes, size, shared);
    add(&s.allocated_usable, usable, shared);
    let left = s.countdown.load(Ordering::Relaxed);
    let (left, sampled) = match left.checked_sub(usable) {
        Some(r) if r > 0 => (r, false),
        // None drawn yet (a thread's first allocation): draw, and count this one down from it.
        _ if left == 0 => match draw().checked_sub(usable) {
            Some(r) if r > 0 => (r, false),
            _ => (draw(), true),
        },
        _ => (draw(), true),
    };
    s.countdown.store(left, Ordering::Relaxed);
    sampled
}

/// Counts a free of a block of `usable` bytes.
#[inline(always)]
pub fn free(usable: u64) {
    if let Some((s, shared)) = slot() {
        add(&s.frees, 1, shared);
        add(&s.freed_usable, usable, shared);
    }
}

/// Takes back a free counted for a realloc that then failed (its block is still live).
pub fn unfree(usable: u64) {
    if let Some((s, shared)) = slot() {
        add(&s.frees, 1u64.wrapping_neg(), shared);
        add(&s.freed_usable, usable.wrapping_neg(), shared);
    }
}

/// The totals over every thread so far.
pub fn totals() -> HeapTotals {
    let used = USED.load(Ordering::Acquire).min(SLOTS);
    let mut t = HeapTotals::default();
    for s in &TABLE[..used] {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        t.allocations = t.allocations.wrapping_add(get(&s.allocations));
        t.frees = t.frees.wrapping_add(get(&s.frees));
        t.allocated_bytes = t.allocated_bytes.wrapping_add(get(&s.allocated_bytes));
        t.allocated_usable = t.allocated_usable.wrapping_add(get(&s.allocated_usable));
        t.freed_usable = t.freed_usable.wrapping_add(get(&s.freed_usable));
    }
    t
}

/// In a fork child: the threads that owned the other slots do not exist here, so their slots are
/// free for the child's threads (their counts stay, as part of what the child inherited).
pub fn after_fork_in_child() {
    let key = KEY.load(Ordering::Relaxed);
    if key == NO_KEY {
        return;
    }
    let mine = words::get_or_key(words::THIN_SLOT, key);
    for (i, s) in TABLE.iter().enumerate().skip(1) {
        if i != mine {
            s.owned.store(0, Ordering::Relaxed);
        }
    }
}

/// The table is the process's: a test that measures sums holds this, so another test counting at
/// the same time (the test harness runs them on parallel threads) cannot add to what it measures.
#[cfg(test)]
pub(crate) static TABLE_IN_TEST: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    fn lock() -> std::sync::MutexGuard<'static, ()> {
        TABLE_IN_TEST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn threads_count_into_their_own_slots_and_the_sum_keeps_exited_threads() {
        let _table = lock();
        assert!(init());
        let before = totals();
        let workers: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..1000 {
                        alloc(10, 24, || 1000);
                    }
                    for _ in 0..400 {
                        free(24);
                    }
                    unfree(24);
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        let after = totals();
        assert_eq!(after.allocations - before.allocations, 4000);
        assert_eq!(after.frees - before.frees, 4 * 399);
        assert_eq!(after.allocated_bytes - before.allocated_bytes, 40_000);
        assert_eq!(after.allocated_usable - before.allocated_usable, 96_000);
        assert_eq!(after.freed_usable - before.freed_usable, 4 * 399 * 24);
        // The exited threads' slots were handed back, and a new thread reuses one, counting on.
        std::thread::spawn(|| alloc(1, 24, || 1000))
            .join()
            .expect("reuse");
        assert_eq!(totals().allocations - before.allocations, 4001);
    }

    #[test]
    fn the_allocation_that_crosses_zero_is_sampled_and_the_next_countdown_drawn() {
        let _table = lock();
        assert!(init());
        let got: Vec<bool> = std::thread::spawn(|| (0..8).map(|_| alloc(30, 30, || 100)).collect())
            .join()
            .expect("worker");
        // 100 - 30 - 30 - 30 leaves 10: the fourth crosses zero, and the countdown starts again.
        let f = false;
        assert_eq!(got, [f, f, f, true, f, f, f, true]);
    }
}
