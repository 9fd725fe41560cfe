//! Turning wrapped CUDA calls into messages (called with the guard held).
use std::sync::atomic::Ordering;

use memshim_trace::{
    CopyApi, CudaApi, CudaFailure, DeviceAlloc, DeviceFree, DeviceMemory, ManagedHint, MemInfo,
    Record, TimedCopy, Transfer,
};

use super::driver::current_device;
use crate::record::recorder::{record_guarded, send_stacked};
use crate::{channel, sys::clock};

fn send(record: Record, with_stack: bool) {
    send_at(None, record, with_stack);
}

/// Set by the first CUDA call recorded: the sampler starts NVML then.
static USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True once the process made a CUDA memory call.
pub fn used() -> bool {
    USED.load(Ordering::Relaxed)
}

fn send_at(at: Option<u64>, record: Record, with_stack: bool) {
    if !USED.load(Ordering::Relaxed) {
        USED.store(true, Ordering::Relaxed);
    }
    record_guarded(channel::cuda_active, || {
        send_stacked(at.unwrap_or_else(clock::monotonic_ns), record, with_stack);
    });
}

/// A successful allocation.
pub fn alloc(api: CudaApi, kind: DeviceMemory, addr: u64, size: u64) {
    let device = current_device();
    send(
        Record::DeviceAlloc(DeviceAlloc {
            api,
            kind,
            addr,
            size,
            device,
            stack: 0,
        }),
        true,
    );
    crate::torch::on_driver_alloc();
}

/// A release, before the real call.
pub fn free(api: CudaApi, kind: DeviceMemory, addr: u64) {
    send(Record::DeviceFree(DeviceFree { api, kind, addr }), false);
}

/// A failed call.
pub fn failure(api: CudaApi, size: u64, result: i32) {
    let device = current_device();
    send(
        Record::CudaFailure(CudaFailure {
            api,
            size,
            result,
            device,
            stack: 0,
        }),
        true,
    );
}

/// A copy that started at `t0` and took `duration_ns`; `timer` names its GPU time, to come.
#[allow(clippy::too_many_arguments)]
pub fn copy(
    api: CopyApi,
    dst: u64,
    src: u64,
    size: u64,
    stream: u64,
    t0: u64,
    duration_ns: u64,
    result: i32,
    timer: Option<u32>,
) {
    let device = current_device();
    let copy = Transfer {
        api,
        dst,
        src,
        size,
        stream,
        duration_ns,
        result,
        device,
        stack: 0,
    };
    let record = match timer {
        Some(timer) => Record::TimedCopy(Box::new(TimedCopy { copy, timer })),
        None => Record::Copy(Box::new(copy)),
    };
    send_at(Some(t0), record, true);
}

/// A `cuMemGetInfo` answer.
pub fn mem_info(free: u64, total: u64) {
    let device = current_device();
    send(
        Record::MemInfo(MemInfo {
            device,
            free,
            total,
        }),
        false,
    );
}

/// A prefetch or advice.
pub fn hint(api: CudaApi, addr: u64, size: u64, value: i32) {
    send(
        Record::ManagedHint(ManagedHint {
            api,
            addr,
            size,
            value,
            stack: 0,
        }),
        true,
    );
}
