//! GPU timing of asynchronous copies: a pool of CUDA event pairs. The copying thread records one
//! event before the copy and one after it on the copy's own stream (`cuEventRecord` only enqueues;
//! nothing waits); the poller thread later asks whether the second has completed (`cuEventQuery`,
//! which never blocks) and sends how long the copy ran on the GPU (`cuEventElapsedTime`).
//!
//! What it must never do: synchronise a stream of the program, touch an event while a stream
//! capture is underway (a query during a global-mode capture invalidates the program's graph, which
//! is why PyTorch's caching allocator defers its own queries), or touch an event whose context the
//! program destroyed. So all event work happens between `enter` and the drop of its `EventWork`, and
//! `hold` (capture begins, context teardown) first waits for the work in flight to finish: a
//! Dekker-style handshake on two sequentially consistent counters, with no lock. Context teardown
//! also moves the pool to a new generation: older events are forgotten, never touched again.
//!
//! # Safety
//! The driver functions come from `DriverFn` and are called with their documented signatures.
//! A slot's events belong to the thread that moved it out of FREE until it stores FREE or PENDING
//! again; PENDING slots belong to the poller.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering::*};

use memshim_trace::{CopyTime, Record};

use super::driver::DriverFn;

type Event = *mut c_void;
type Stream = *mut c_void;
type Ctx = *mut c_void;

static EVENT_CREATE: DriverFn = DriverFn::new(c"cuEventCreate");
static EVENT_RECORD: DriverFn = DriverFn::new(c"cuEventRecord");
static EVENT_RECORD_PTSZ: DriverFn = DriverFn::new(c"cuEventRecord_ptsz");
static EVENT_QUERY: DriverFn = DriverFn::new(c"cuEventQuery");
static EVENT_ELAPSED: DriverFn = DriverFn::new(c"cuEventElapsedTime");
static EVENT_DESTROY: DriverFn = DriverFn::new(c"cuEventDestroy_v2");
static CTX_GET_CURRENT: DriverFn = DriverFn::new(c"cuCtxGetCurrent");

const CUDA_ERROR_NOT_READY: i32 = 600;
const SLOTS: usize = 256;
const FREE: u8 = 0;
const BUSY: u8 = 1;
const PENDING: u8 = 2;

/// Two events and what they time.
struct Slot {
    state: AtomicU8,
    /// The context the events were created in, and the pool generation then.
    ctx: AtomicUsize,
    generation: AtomicU32,
    start: AtomicUsize,
    end: AtomicUsize,
    timer: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    ctx: AtomicUsize::new(0),
    generation: AtomicU32::new(0),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    timer: AtomicU32::new(0),
};
static POOL: [Slot; SLOTS] = [EMPTY; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
static NEXT_TIMER: AtomicU32 = AtomicU32::new(1);
/// Bumped when the program may have destroyed a context: events of older generations are gone.
static GENERATION: AtomicU32 = AtomicU32::new(1);
/// Captures underway and context teardowns in progress: no event work while it is above 0.
static HOLDS: AtomicUsize = AtomicUsize::new(0);
/// Threads doing event work right now.
static WORKING: AtomicUsize = AtomicUsize::new(0);

/// Permission to touch events, until dropped.
struct EventWork;

fn enter() -> Option<EventWork> {
    WORKING.fetch_add(1, SeqCst);
    if HOLDS.load(SeqCst) > 0 {
        WORKING.fetch_sub(1, SeqCst);
        return None;
    }
    Some(EventWork)
}

impl Drop for EventWork {
    fn drop(&mut self) {
        WORKING.fetch_sub(1, SeqCst);
    }
}

/// Stops event work (a capture begins, a context is about to go) and waits for work in flight,
/// which is a few non-blocking driver calls.
pub fn hold() {
    HOLDS.fetch_add(1, SeqCst);
    while WORKING.load(SeqCst) > 0 {
        std::thread::yield_now();
    }
}

/// Ends one `hold`.
pub fn release() {
    let _ = HOLDS.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1));
}

/// Called with a hold: every event made so far may be destroyed with its context.
pub fn forget_events() {
    GENERATION.fetch_add(1, SeqCst);
}

type CreateFn = unsafe extern "C" fn(*mut Event, u32) -> i32;
type RecordFn = unsafe extern "C" fn(Event, Stream) -> i32;
type EventFn = unsafe extern "C" fn(Event) -> i32;
type ElapsedFn = unsafe extern "C" fn(*mut f32, Event, Event) -> i32;
type CtxFn = unsafe extern "C" fn(*mut Ctx) -> i32;

struct Driver {
    create: CreateFn,
    record: RecordFn,
    record_ptsz: Option<RecordFn>,
    query: EventFn,
    elapsed: ElapsedFn,
    destroy: EventFn,
    ctx_current: CtxFn,
}

fn driver() -> Option<Driver> {
    // SAFETY: each type is the C signature of the driver export of that name.
    unsafe {
        Some(Driver {
            create: EVENT_CREATE.function::<CreateFn>()?,
            record: EVENT_RECORD.function::<RecordFn>()?,
            record_ptsz: EVENT_RECORD_PTSZ.function::<RecordFn>(),
            query: EVENT_QUERY.function::<EventFn>()?,
            elapsed: EVENT_ELAPSED.function::<ElapsedFn>()?,
            destroy: EVENT_DESTROY.function::<EventFn>()?,
            ctx_current: CTX_GET_CURRENT.function::<CtxFn>()?,
        })
    }
}

impl Driver {
    /// Records `ev` on `stream` as the copy saw it: a `_ptsz` copy's stream 0 is the thread's own.
    fn record_on(&self, ev: Event, stream: Stream, ptsz: bool) -> bool {
        let f = if ptsz {
            match self.record_ptsz {
                Some(f) => f,
                None => return false,
            }
        } else {
            self.record
        };
        // SAFETY: `ev` is a live event of this generation; `stream` is the one the copy used.
        unsafe { f(ev, stream) == 0 }
    }
}

/// A copy whose first event is recorded.
pub struct Started {
    slot: usize,
}

/// A copy bracketed by both events; `publish` once its record is sent.
pub struct Timed {
    slot: usize,
    pub timer: u32,
}

/// Before an asynchronous copy of `size` bytes on `stream`: records the first event, or gives
/// `None` (not timed) when the copy is small, a capture is underway, or the pool is busy.
pub fn before(size: u64, stream: Stream, ptsz: bool) -> Option<Started> {
    let min = crate::channel::config()?.copy_event_bytes;
    if min == 0 || size < min {
        return None;
    }
    let d = driver()?;
    let _work = enter()?;
    let mut ctx: Ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    if unsafe { (d.ctx_current)(&mut ctx) } != 0 || ctx.is_null() {
        return None;
    }
    let i = claim(ctx as usize)?;
    let s = &POOL[i];
    let generation = GENERATION.load(SeqCst);
    if s.ctx.load(Relaxed) != ctx as usize || s.generation.load(Relaxed) != generation {
        if s.generation.load(Relaxed) == generation {
            // Same generation, other context: its events are still alive and ours to destroy.
            destroy_events(&d, s);
        }
        s.start.store(0, Relaxed);
        s.end.store(0, Relaxed);
        let (mut a, mut b): (Event, Event) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid out-pointers; flags 0 is CU_EVENT_DEFAULT (timing enabled).
        let made = unsafe { (d.create)(&mut a, 0) == 0 && (d.create)(&mut b, 0) == 0 };
        if !made {
            // SAFETY: only events just created are destroyed.
            unsafe {
                if !a.is_null() {
                    (d.destroy)(a);
                }
            }
            s.state.store(FREE, Release);
            return None;
        }
        s.start.store(a as usize, Relaxed);
        s.end.store(b as usize, Relaxed);
        s.ctx.store(ctx as usize, Relaxed);
        s.generation.store(generation, Relaxed);
    }
    if !d.record_on(s.start.load(Relaxed) as Event, stream, ptsz) {
        s.state.store(FREE, Release);
        return None;
    }
    Some(Started { slot: i })
}

/// After the copy returned `result`: records the second event. `None` when the copy failed or a
/// capture began meanwhile (the slot is freed and the copy stays untimed).
pub fn after(started: Started, stream: Stream, ptsz: bool, result: i32) -> Option<Timed> {
    let s = &POOL[started.slot];
    let timed = (|| {
        if result != 0 {
            return None;
        }
        let d = driver()?;
        let _work = enter()?;
        if s.generation.load(Relaxed) != GENERATION.load(SeqCst) {
            return None;
        }
        if !d.record_on(s.end.load(Relaxed) as Event, stream, ptsz) {
            return None;
        }
        Some(NEXT_TIMER.fetch_add(1, Relaxed))
    })();
    match timed {
        Some(timer) => {
            s.timer.store(timer, Relaxed);
            Some(Timed {
                slot: started.slot,
                timer,
            })
        }
        None => {
            s.state.store(FREE, Release);
            None
        }
    }
}

impl Timed {
    /// Hands the slot to the poller. Called after the copy's record was sent, so that its time can
    /// never reach the writer before it.
    pub fn publish(self) {
        POOL[self.slot].state.store(PENDING, Release);
    }
}

/// Slots looked at per claim: when copies outrun the poller the pool is full, and a bounded look
/// keeps an untimed copy cheap.
const SCAN: usize = 32;

/// A FREE slot for `ctx`, now BUSY: one whose events are of this context if any is free among the
/// next `SCAN` (successive claims look at successive windows).
fn claim(ctx: usize) -> Option<usize> {
    let from = NEXT_SLOT.fetch_add(SCAN, Relaxed);
    let take = |i: usize| {
        POOL[i]
            .state
            .compare_exchange(FREE, BUSY, Acquire, Relaxed)
            .is_ok()
    };
    let window = (0..SCAN).map(|k| (from + k) % SLOTS);
    window
        .clone()
        .find(|&i| {
            POOL[i].state.load(Relaxed) == FREE && POOL[i].ctx.load(Relaxed) == ctx && take(i)
        })
        .or_else(|| window.clone().find(|&i| take(i)))
}

fn destroy_events(d: &Driver, s: &Slot) {
    for ev in [s.start.load(Relaxed), s.end.load(Relaxed)] {
        if ev != 0 {
            // SAFETY: an event of the current generation, which no one else holds.
            unsafe { (d.destroy)(ev as Event) };
        }
    }
}

/// The poller's round: every completed timing goes to `send`. Returns whether some are still in
/// flight. Never waits: a held pool (capture, teardown) is left for a later round.
pub fn poll(mut send: impl FnMut(Record)) -> bool {
    if !POOL.iter().any(|s| s.state.load(Relaxed) == PENDING) {
        return false;
    }
    let Some(d) = driver() else { return false };
    let Some(_work) = enter() else { return true };
    let generation = GENERATION.load(SeqCst);
    let mut in_flight = false;
    for s in POOL.iter() {
        if s.state.load(Acquire) != PENDING {
            continue;
        }
        if s.generation.load(Relaxed) != generation {
            // Its context may be gone, and the events with it: never touched again.
            s.start.store(0, Relaxed);
            s.end.store(0, Relaxed);
            s.ctx.store(0, Relaxed);
            s.state.store(FREE, Release);
            continue;
        }
        let (a, b) = (s.start.load(Relaxed) as Event, s.end.load(Relaxed) as Event);
        // SAFETY: live events of this generation, owned by the poller while PENDING.
        match unsafe { (d.query)(b) } {
            0 => {
                let mut ms = 0f32;
                // SAFETY: as above; `ms` is writable.
                if unsafe { (d.elapsed)(&mut ms, a, b) } == 0 && ms >= 0.0 {
                    send(Record::CopyTime(CopyTime {
                        timer: s.timer.load(Relaxed),
                        gpu_ns: (f64::from(ms) * 1e6).round() as u64,
                    }));
                }
                s.state.store(FREE, Release);
            }
            CUDA_ERROR_NOT_READY => in_flight = true,
            _ => s.state.store(FREE, Release),
        }
    }
    in_flight
}
