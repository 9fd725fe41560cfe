//! The device section of the report: CUDA memory kinds, GPUs, failures and findings.
use memshim_trace::{CudaApi, DeviceMemory};

use super::model::{
    DeviceRow, DeviceSection, FailureOut, Finding, KindRow, LeakClass, ManagedHints, OwnerRow,
    SizeBucket,
};
use super::sites::{frames, leak_class};
use crate::analysis::device::{CUDA_ERROR_OUT_OF_MEMORY, DEVICE_SIZE_BUCKETS};
use crate::analysis::merge_sites;
use crate::replay::Replayed;
use crate::symbolize::Symbolizer;
use crate::units::human_bytes;

/// The leak classes of CUDA memory: device (with physical), managed, pinned, registered.
pub fn leaks(t: &Replayed, sym: &mut Symbolizer) -> [LeakClass; 4] {
    let sites = |kinds: &[DeviceMemory]| {
        merge_sites(
            kinds
                .iter()
                .filter_map(|k| t.device.kinds.get(k))
                .map(|h| h.sites()),
        )
    };
    [
        leak_class(
            t,
            sym,
            &sites(&[DeviceMemory::Device, DeviceMemory::Physical]),
        ),
        leak_class(t, sym, &sites(&[DeviceMemory::Managed])),
        leak_class(t, sym, &sites(&[DeviceMemory::PinnedHost])),
        leak_class(t, sym, &sites(&[DeviceMemory::Registered])),
    ]
}

/// The device section.
pub fn section(t: &Replayed, sym: &mut Symbolizer, leaked_device: &LeakClass) -> DeviceSection {
    let d = &t.device;
    if !d.seen() {
        return DeviceSection {
            findings: super::device_attached::finding(t).into_iter().collect(),
            ..Default::default()
        };
    }
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    let gpu = [DeviceMemory::Device, DeviceMemory::Physical];
    let heaps = || gpu.iter().filter_map(|k| d.kinds.get(k));
    let failures: Vec<FailureOut> = d
        .failures
        .iter()
        .map(|f| FailureOut {
            api: api_name(f.call.api).to_string(),
            size: f.call.size,
            result: f.call.result,
            error: error_name(f.call.result),
            device: f.call.device,
            time_s: secs(f.t),
            live_device_bytes: f.live_device_bytes,
            retried_after_freeing: f.retried_after_freeing.is_some(),
            freed_before_retry: f.retried_after_freeing.unwrap_or(0),
            site: None,
            frames: frames(t, sym, f.call.stack),
        })
        .collect();
    let gpus = super::gpus::rows(t);
    let mut out = DeviceSection {
        seen: true,
        gpus,
        allocations: heaps().map(|h| h.allocations).sum(),
        frees: heaps().map(|h| h.frees).sum(),
        allocated_bytes: heaps().map(|h| h.allocated_bytes).sum(),
        live_bytes: d.live_bytes,
        peak_bytes: d.peak_bytes,
        peak_time_s: if d.peak_bytes > 0 {
            secs(d.peak_t)
        } else {
            0.0
        },
        kinds: d
            .kinds
            .iter()
            .map(|(k, h)| KindRow {
                kind: kind_name(*k),
                allocations: h.allocations,
                allocated_bytes: h.allocated_bytes,
                live_bytes: h.live_bytes,
                live_count: h.live_count(),
                peak_bytes: h.peak_bytes,
            })
            .collect(),
        devices: d
            .devices
            .iter()
            .map(|(id, p)| DeviceRow {
                device: *id,
                live_bytes: p.live_bytes,
                peak_bytes: p.peak_bytes,
                peak_time_s: if p.peak_bytes > 0 {
                    secs(p.peak_t)
                } else {
                    0.0
                },
                total_bytes: (p.total_bytes > 0).then_some(p.total_bytes),
                min_free_bytes: p.min_free_bytes,
                unaccounted_bytes: p.min_free_bytes.map(|_| p.max_unaccounted_bytes),
            })
            .collect(),
        owners: owners(t, sym),
        failures,
        mem_info_calls: d.mem_info_calls,
        size_histogram: DEVICE_SIZE_BUCKETS
            .iter()
            .map(|&b| Some(b))
            .chain([None])
            .zip(d.size_histogram)
            .map(|(le_bytes, count)| SizeBucket { le_bytes, count })
            .collect(),
        distinct_sizes: d.sizes.len() as u64,
        managed_hints: ManagedHints {
            prefetch_calls: d.prefetches.0,
            prefetch_bytes: d.prefetches.1,
            advise_calls: d.advises.0,
        },
        unified_memory: super::unified::section(t, sym),
        findings: Vec::new(),
    };
    out.findings = findings(&out, leaked_device, t.detached());
    out.findings.extend(churn(&out));
    out.findings
        .extend(super::gpus::findings(&out.gpus, out.peak_bytes));
    out.findings.extend(super::unified::finding(&out));
    out.findings.extend(super::device_attached::finding(t));
    out
}

/// GPU memory by owner, from every call site of device and physical memory (freed or not): NCCL's
/// buffers, for one, are usually freed by `destroy_process_group` and so never show as leaks.
fn owners(t: &Replayed, sym: &mut Symbolizer) -> Vec<OwnerRow> {
    let mut rows: Vec<OwnerRow> = Vec::new();
    for kind in [DeviceMemory::Device, DeviceMemory::Physical] {
        let Some(heap) = t.device.kinds.get(&kind) else {
            continue;
        };
        for (stack, s) in heap.sites().iter() {
            let owner = super::sites::owned_frames(t, sym, stack).1;
            let i = match rows.iter().position(|r| r.owner == owner) {
                Some(i) => i,
                None => {
                    rows.push(OwnerRow {
                        owner,
                        allocations: 0,
                        allocated_bytes: 0,
                        live_bytes: 0,
                    });
                    rows.len() - 1
                }
            };
            rows[i].allocations += s.allocations;
            rows[i].allocated_bytes += s.allocated_bytes;
            rows[i].live_bytes += s.live_bytes;
        }
    }
    rows.retain(|r| r.allocations > 0);
    rows.sort_by(|a, b| {
        b.allocated_bytes
            .cmp(&a.allocated_bytes)
            .then(a.owner.cmp(b.owner))
    });
    rows
}

/// Many device allocations of many sizes, freed and allocated again: what makes a caching
/// allocator split blocks and fragment.
fn churn(s: &DeviceSection) -> Option<Finding> {
    if s.distinct_sizes < 32 || s.frees < 100 {
        return None;
    }
    Some(Finding {
        kind: "size_churn",
        text: format!(
            "{} device allocations of {} different sizes with {} frees: allocations that keep changing size make a caching allocator split and fragment its blocks; fixed shapes (padding to a few sizes) or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True help",
            s.allocations, s.distinct_sizes, s.frees
        ),
     ..Default::default() })
}

fn findings(s: &DeviceSection, leaked: &LeakClass, detached: bool) -> Vec<Finding> {
    let mut v = Vec::new();
    if leaked.count > 0 {
        // After a detach the process went on: what was allocated then may be freed later.
        let (kind, what) = if detached {
            (
                "held_at_detach",
                "was still allocated when memshim detached",
            )
        } else {
            ("device_leak", "was never freed")
        };
        v.push(Finding {
            kind,
            text: format!(
                "{} of device memory in {} from {} {what} (largest: {} from one site)",
                human_bytes(leaked.bytes),
                crate::units::blocks(leaked.count, "block"),
                crate::units::blocks(leaked.sites.len() as u64, "call site"),
                human_bytes(leaked.sites.first().map_or(0, |x| x.bytes))
            ),
            ..Default::default()
        });
    }
    let ooms: Vec<&FailureOut> = s
        .failures
        .iter()
        .filter(|f| f.result == CUDA_ERROR_OUT_OF_MEMORY)
        .collect();
    if !ooms.is_empty() {
        let retried: Vec<&&FailureOut> = ooms.iter().filter(|f| f.retried_after_freeing).collect();
        let flushed: u64 = retried.iter().map(|f| f.freed_before_retry).sum();
        let mut text = format!(
            "{} failed with out-of-memory (largest request {}, with {} held at the time)",
            crate::units::blocks(ooms.len() as u64, "device allocation"),
            human_bytes(ooms.iter().map(|f| f.size).max().unwrap_or(0)),
            human_bytes(ooms.iter().map(|f| f.live_device_bytes).max().unwrap_or(0)),
        );
        if !retried.is_empty() {
            text.push_str(&format!(
                "; {} were retried after freeing {} — the pattern of a caching allocator flushing its cache, a sign of fragmentation or of a peak too close to capacity. For PyTorch try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and fixed tensor shapes; use torch.cuda.empty_cache() only to confirm the diagnosis",
                retried.len(),
                human_bytes(flushed)
            ));
        }
        let largest = ooms.iter().max_by_key(|f| f.size);
        v.push(Finding {
            kind: "out_of_memory",
            text,
            bytes: largest.map(|f| f.size),
            site: largest.and_then(|f| super::site_label::label(&f.frames)),
            ..Default::default()
        });
    }
    for d in &s.devices {
        if let Some(extra) = d.unaccounted_bytes.filter(|&b| b >= 256 << 20) {
            v.push(Finding {
                kind: "unaccounted_memory",
                text: format!(
                    "on GPU {} the driver reported up to {} more in use than the program held: the CUDA context and libraries' workspaces, other processes on the GPU, or memory allocated where memshim could not see",
                    d.device,
                    human_bytes(extra)
                ),
             ..Default::default() });
        }
        if let Some(total) = d.total_bytes {
            let frac = d.peak_bytes as f64 / total as f64;
            if frac >= 0.9 {
                v.push(Finding {
                    kind: "near_capacity",
                    text: format!(
                        "GPU {} peaked at {} of {} ({:.0}%): the job runs close to capacity",
                        d.device,
                        human_bytes(d.peak_bytes),
                        human_bytes(total),
                        frac * 100.0
                    ),
                    bytes: Some(d.peak_bytes),
                    ..Default::default()
                });
            }
        }
    }
    v
}

/// The driver function's name as users know it.
pub fn api_name(api: CudaApi) -> &'static str {
    match api {
        CudaApi::MemAlloc => "cuMemAlloc",
        CudaApi::MemAllocPitch => "cuMemAllocPitch",
        CudaApi::MemAllocManaged => "cuMemAllocManaged",
        CudaApi::MemAllocAsync => "cuMemAllocAsync",
        CudaApi::MemAllocFromPoolAsync => "cuMemAllocFromPoolAsync",
        CudaApi::MemFree => "cuMemFree",
        CudaApi::MemFreeAsync => "cuMemFreeAsync",
        CudaApi::MemHostAlloc => "cuMemHostAlloc",
        CudaApi::MemAllocHost => "cuMemAllocHost",
        CudaApi::MemFreeHost => "cuMemFreeHost",
        CudaApi::MemHostRegister => "cuMemHostRegister",
        CudaApi::MemHostUnregister => "cuMemHostUnregister",
        CudaApi::MemAddressReserve => "cuMemAddressReserve",
        CudaApi::MemAddressFree => "cuMemAddressFree",
        CudaApi::MemCreate => "cuMemCreate",
        CudaApi::MemRelease => "cuMemRelease",
        CudaApi::MemMap => "cuMemMap",
        CudaApi::MemUnmap => "cuMemUnmap",
        CudaApi::MemPrefetchAsync => "cuMemPrefetchAsync",
        CudaApi::MemAdvise => "cuMemAdvise",
        CudaApi::MemGetInfo => "cuMemGetInfo",
    }
}

fn kind_name(k: DeviceMemory) -> &'static str {
    match k {
        DeviceMemory::Device => "device",
        DeviceMemory::Managed => "managed",
        DeviceMemory::PinnedHost => "pinned",
        DeviceMemory::Registered => "registered",
        DeviceMemory::Reserved => "reserved",
        DeviceMemory::Physical => "physical",
        DeviceMemory::Mapped => "mapped",
    }
}

/// The CUDA error's name, for the codes memory calls return.
pub fn error_name(code: i32) -> String {
    match code {
        0 => "CUDA_SUCCESS".into(),
        1 => "CUDA_ERROR_INVALID_VALUE".into(),
        2 => "CUDA_ERROR_OUT_OF_MEMORY".into(),
        3 => "CUDA_ERROR_NOT_INITIALIZED".into(),
        4 => "CUDA_ERROR_DEINITIALIZED".into(),
        100 => "CUDA_ERROR_NO_DEVICE".into(),
        101 => "CUDA_ERROR_INVALID_DEVICE".into(),
        201 => "CUDA_ERROR_INVALID_CONTEXT".into(),
        200 => "CUDA_ERROR_INVALID_IMAGE".into(),
        205 => "CUDA_ERROR_MAP_FAILED".into(),
        206 => "CUDA_ERROR_UNMAP_FAILED".into(),
        208 => "CUDA_ERROR_ALREADY_MAPPED".into(),
        211 => "CUDA_ERROR_NOT_MAPPED".into(),
        304 => "CUDA_ERROR_OPERATING_SYSTEM".into(),
        400 => "CUDA_ERROR_INVALID_HANDLE".into(),
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        712 => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED".into(),
        713 => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED".into(),
        500 => "CUDA_ERROR_NOT_FOUND".into(),
        600 => "CUDA_ERROR_NOT_READY".into(),
        719 => "CUDA_ERROR_LAUNCH_FAILED".into(),
        800 => "CUDA_ERROR_NOT_PERMITTED".into(),
        801 => "CUDA_ERROR_NOT_SUPPORTED".into(),
        999 => "CUDA_ERROR_UNKNOWN".into(),
        other => format!("CUresult {other}"),
    }
}
