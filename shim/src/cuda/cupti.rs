//! CUPTI's unified-memory counters (`MEMSHIM_CUPTI=1`): page faults and migrations of managed
//! memory, which no driver call shows. Started by the sampler thread once the process used CUDA (so
//! CUPTI's own start-up runs on an untraced thread), flushed by it every second and once more when
//! the trace closes. The records are summed per counter kind, direction and 2 MiB region of managed
//! memory before they travel, so a fault storm costs the writer little.
//!
//! What it must never do: load CUPTI without being asked (it is heavy, and only one tool may hold
//! it), or hand CUPTI memory from the program's allocator: activity buffers are mapped directly.
//!
//! # Safety
//! The CUPTI functions are looked up by name in the library the shim loaded and called with the
//! signatures of `cupti_activity.h` (CUPTI 13). Record fields are read at the offsets of
//! `CUpti_ActivityUnifiedMemoryCounter2` (checked on the H200 by `scripts/h200/cupti_probe.sh`),
//! only for records whose kind says they are one, within the valid part of the buffer CUPTI handed
//! back.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use memshim_trace::{CuptiState, Record, UmCounter};

use super::cupti_lib::CUPTI_SUCCESS;
use crate::record::msg::Msg;
use crate::{channel, record::guard, sys::real};

const ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: u32 = 25;
const SCOPE_PROCESS_ALL_DEVICES: u32 = 2;
const FLUSH_FORCED: u32 = 1;
const CPU_PAGE_FAULT_COUNT: u32 = 3;
const BUFFER_BYTES: usize = 1 << 20;
/// Offsets in `CUpti_ActivityUnifiedMemoryCounter2` (64 bytes).
const OFF_COUNTER_KIND: usize = 4;
const OFF_VALUE: usize = 8;
const OFF_ADDRESS: usize = 32;
const OFF_SRC: usize = 40;
const OFF_DST: usize = 44;

type ConfigureFn = unsafe extern "C" fn(*mut UmConfig, u32) -> i32;
type RegisterFn = unsafe extern "C" fn(RequestFn, CompleteFn) -> i32;
type EnableFn = unsafe extern "C" fn(u32) -> i32;
type FlushFn = unsafe extern "C" fn(u32) -> i32;
type NextRecordFn = unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> i32;
type RequestFn = extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type CompleteFn = extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

/// `CUpti_ActivityUnifiedMemoryCounterConfig`.
#[repr(C)]
struct UmConfig {
    scope: u32,
    kind: u32,
    device_id: u32,
    enable: u32,
}

/// 0: not started; 1: being started; 2: started (or failed to, and said why).
static STARTED: AtomicU8 = AtomicU8::new(0);
static FLUSH: AtomicUsize = AtomicUsize::new(0);
static NEXT_RECORD: AtomicUsize = AtomicUsize::new(0);

/// Loads CUPTI and enables the counters; records what happened either way. Called by the sampler
/// thread once CUDA is used, and by the first managed allocation before it returns; whoever comes
/// second waits until the first is done, so no managed memory is handed out before the counters
/// run.
pub fn start(lib: Option<&str>) {
    if STARTED
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Loading CUPTI takes milliseconds; a raw nanosleep is no cancellation point and takes
        // no lock. Bounded: in a fork child of a process whose sampler was starting it, no one
        // ever finishes.
        for _ in 0..10_000 {
            if STARTED.load(Ordering::Acquire) == 2 {
                break;
            }
            crate::sys::nap_signal_safe(std::time::Duration::from_micros(200));
        }
        return;
    }
    let state = match enable(lib) {
        Ok(path) => CuptiState {
            enabled: true,
            detail: path,
        },
        Err(why) => CuptiState {
            enabled: false,
            detail: why,
        },
    };
    if !state.enabled {
        channel::warn(&format!(
            "CUPTI unified-memory counters are off: {}",
            state.detail
        ));
    }
    channel::send(Msg::Record(Record::Cupti(state)));
    STARTED.store(2, Ordering::Release);
}

/// Hands CUPTI's completed buffers to the callback (forced at the end, so partly filled ones too).
pub fn flush(forced: bool) {
    let f = FLUSH.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: `f` is cuptiActivityFlushAll from the loaded CUPTI (see the module note).
        unsafe { std::mem::transmute::<usize, FlushFn>(f)(if forced { FLUSH_FORCED } else { 0 }) };
    }
}

fn enable(lib: Option<&str>) -> Result<String, String> {
    let cupti = super::cupti_lib::open(lib)?;
    // SAFETY: each type is the documented signature of the CUPTI export of that name.
    let (configure, register, enable_kind, next, flush_all) = unsafe {
        (
            cupti.required::<ConfigureFn>(c"cuptiActivityConfigureUnifiedMemoryCounter")?,
            cupti.required::<RegisterFn>(c"cuptiActivityRegisterCallbacks")?,
            cupti.required::<EnableFn>(c"cuptiActivityEnable")?,
            cupti.required::<NextRecordFn>(c"cuptiActivityGetNextRecord")?,
            cupti.required::<FlushFn>(c"cuptiActivityFlushAll")?,
        )
    };
    let explain = |call: &str, r: i32| cupti.failed(call, r);
    // Every counter kind first; some GPUs and drivers refuse the later ones, so then fewer.
    let mut counting = "";
    for (kinds, names) in [
        (&[1u32, 2, 3, 4, 5, 6, 7, 8][..], "every counter kind"),
        (
            &[1, 2, 3, 4, 5, 6],
            "no remote-map or device-to-device counters",
        ),
        (&[1, 2, 3, 4], "transfers and page faults only"),
    ] {
        let mut config: Vec<UmConfig> = kinds
            .iter()
            .map(|&kind| UmConfig {
                scope: SCOPE_PROCESS_ALL_DEVICES,
                kind,
                device_id: 0,
                enable: 1,
            })
            .collect();
        // SAFETY: `config` holds `len` valid entries for the duration of the call.
        let r = unsafe { configure(config.as_mut_ptr(), config.len() as u32) };
        if r == CUPTI_SUCCESS {
            counting = names;
            break;
        }
        if kinds.len() == 4 {
            return Err(explain("configuring the unified-memory counters", r));
        }
    }
    NEXT_RECORD.store(next as usize, Ordering::Release);
    // SAFETY: two callbacks of the documented signatures, alive for the whole process.
    let r = unsafe { register(buffer_requested, buffer_completed) };
    if r != CUPTI_SUCCESS {
        return Err(explain(
            "registering activity buffers (another tool may hold CUPTI)",
            r,
        ));
    }
    // SAFETY: a plain call with an activity kind.
    let r = unsafe { enable_kind(ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) };
    if r != CUPTI_SUCCESS {
        return Err(explain("enabling unified-memory counter activity", r));
    }
    FLUSH.store(flush_all as usize, Ordering::Release);
    Ok(format!("{} ({counting})", cupti.path))
}

extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let p = real::mmap(
        std::ptr::null_mut(),
        BUFFER_BYTES,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    let ok = p != libc::MAP_FAILED;
    // SAFETY: CUPTI's out-pointers, valid for this call; a null buffer tells CUPTI to drop records.
    unsafe {
        *buffer = if ok { p.cast() } else { std::ptr::null_mut() };
        *size = if ok { BUFFER_BYTES } else { 0 };
        *max_records = 0;
    }
}

extern "C" fn buffer_completed(
    _ctx: *mut c_void,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    // CUPTI's thread may be one of the program's: nothing memshim allocates here is the program's.
    let guard = guard::enter();
    let counters = sum(buffer, valid);
    if !counters.is_empty() {
        channel::send(Msg::Record(Record::UnifiedMemory(counters)));
    }
    drop(guard);
    real::munmap(buffer.cast(), BUFFER_BYTES);
}

/// Sums the unified-memory records of one buffer by (kind, source, destination, 2 MiB region).
fn sum(buffer: *mut u8, valid: usize) -> Vec<UmCounter> {
    let next = NEXT_RECORD.load(Ordering::Acquire);
    if next == 0 {
        return Vec::new();
    }
    // SAFETY: cuptiActivityGetNextRecord from the loaded CUPTI.
    let next = unsafe { std::mem::transmute::<usize, NextRecordFn>(next) };
    let mut by_key: HashMap<(u32, u32, u32, u64), UmCounter> = HashMap::new();
    let mut rec: *mut u8 = std::ptr::null_mut();
    // SAFETY: `buffer`/`valid` are what CUPTI handed back; `rec` is CUPTI's cursor. The loop ends
    // at the buffer's end (CUPTI_ERROR_MAX_LIMIT_REACHED) or on any other error alike.
    while unsafe { next(buffer, valid, &mut rec) } == CUPTI_SUCCESS {
        // SAFETY: every record starts with its u32 kind; a unified-memory one is 64 bytes, read at the
        // layout's offsets (see the module note).
        let (kind, counter, value, address, src, dst) = unsafe {
            let r = |off: usize| rec.add(off);
            (
                (r(0) as *const u32).read_unaligned(),
                (r(OFF_COUNTER_KIND) as *const u32).read_unaligned(),
                (r(OFF_VALUE) as *const u64).read_unaligned(),
                (r(OFF_ADDRESS) as *const u64).read_unaligned(),
                (r(OFF_SRC) as *const u32).read_unaligned(),
                (r(OFF_DST) as *const u32).read_unaligned(),
            )
        };
        if kind != ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER {
            continue;
        }
        let c = by_key
            .entry((counter, src, dst, address >> 21))
            .or_insert(UmCounter {
                kind: counter,
                src,
                dst,
                address,
                records: 0,
                value: 0,
            });
        c.records += 1;
        // A CPU page fault's value is the faulting instruction's address: each record is one fault.
        c.value += if counter == CPU_PAGE_FAULT_COUNT {
            1
        } else {
            value
        };
        c.address = c.address.min(address);
    }
    let mut v: Vec<UmCounter> = by_key.into_values().collect();
    v.sort_by_key(|c| (c.kind, c.address, c.src, c.dst));
    v
}
