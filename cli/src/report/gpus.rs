//! The GPUs as NVML saw them, beside what the shim accounted: the memory the driver counted for the
//! process that no recorded call explains, and PCIe throughput on the copy-bandwidth timeline.
use super::model::{BandwidthSeries, Finding, GpuOut};
use crate::replay::Replayed;
use crate::units::human_bytes;

/// Memory the driver counts beyond the shim's own accounting is a finding from this much on (the CUDA
/// context alone is a few hundred MiB, so smaller gaps are noise).
const UNACCOUNTED_MIN: u64 = 256 << 20;

/// One row per GPU NVML described.
pub fn rows(t: &Replayed) -> Vec<GpuOut> {
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    t.gpus
        .info
        .iter()
        .map(|g| {
            let k = t.gpus.tracks.get(&g.index);
            GpuOut {
                index: g.index,
                name: g.name.clone(),
                uuid: g.uuid.clone(),
                pcie_generation: g.pcie_generation,
                pcie_width: g.pcie_width,
                numa_node: g.numa_node,
                samples: k.map_or(0, |k| k.samples),
                total_bytes: k.map_or(0, |k| k.total_bytes),
                peak_used_bytes: k.map_or(0, |k| k.peak_used.1),
                peak_process_bytes: k.and_then(|k| k.peak_process).map(|p| p.1),
                peak_process_time_s: k.and_then(|k| k.peak_process).map(|p| secs(p.0)),
                mean_gpu_util: k
                    .filter(|k| k.util_samples > 0)
                    .map(|k| k.gpu_util_sum as f64 / k.util_samples as f64),
                mean_memory_util: k
                    .filter(|k| k.util_samples > 0)
                    .map(|k| k.memory_util_sum as f64 / k.util_samples as f64),
                busy_memory_util: k
                    .filter(|k| k.busy_samples > 0)
                    .map(|k| k.busy_memory_util_sum as f64 / k.busy_samples as f64),
            }
        })
        .collect()
}

/// Utilisation readings needed before a GPU is called idle, busy or full.
const MIN_UTIL_SAMPLES: u64 = 10;

/// What NVML says that the shim's accounting does not (memory the driver counted for the process
/// beyond the most it allocated through the calls the shim sees), and what bounds the job, as the
/// seed's checklist asks: a GPU idle most of the time (input-bound), memory busy whenever kernels run
/// (bandwidth-bound), memory nearly full (capacity-bound).
pub fn findings(gpus: &[GpuOut], accounted_peak: u64) -> Vec<Finding> {
    let mut out: Vec<Finding> = gpus
        .iter()
        .flat_map(|g| [full(g), bound(g)])
        .flatten()
        .collect();
    let counted: u64 = gpus.iter().filter_map(|g| g.peak_process_bytes).sum();
    if counted < accounted_peak + UNACCOUNTED_MIN {
        return out;
    }
    out.push(Finding {
        kind: "unaccounted_device_memory",
        text: format!(
            "the driver counted up to {} of GPU memory for this process (NVML), against {} at most through the allocation calls memshim sees: {} went elsewhere (the CUDA context and loaded kernels, library workspaces such as cuBLAS and cuDNN, allocations made before memshim was loaded); it counts against the GPU's capacity all the same",
            human_bytes(counted),
            human_bytes(accounted_peak),
            human_bytes(counted - accounted_peak)
        ),
     ..Default::default() });
    out
}

/// A GPU nearly full at its peak. Capacity is about space and the other two about time, so a job
/// can be both at capacity and waiting on its input: each is said.
fn full(g: &GpuOut) -> Option<Finding> {
    if g.samples < MIN_UTIL_SAMPLES
        || g.total_bytes == 0
        || g.peak_used_bytes * 100 < g.total_bytes * 95
    {
        return None;
    }
    let own = g
        .peak_process_bytes
        .filter(|&b| b < g.peak_used_bytes)
        .map(|b| format!(" ({} of it this process's)", human_bytes(b)))
        .unwrap_or_default();
    Some(Finding {
        kind: "capacity_bound",
        text: format!(
            "GPU {} ran with up to {} of its {} in use (NVML){own}: at capacity, a larger batch or model will not fit; look at the largest device sites and the out-of-memory retries above",
            g.index,
            human_bytes(g.peak_used_bytes),
            human_bytes(g.total_bytes)
        ),
        bytes: Some(g.peak_used_bytes),
        ..Default::default()
    })
}

/// What bounds a GPU's time, from its utilisation readings (counted from when the process first
/// held device memory), if either applies: idle (input-bound) or memory busy while kernels ran.
fn bound(g: &GpuOut) -> Option<Finding> {
    if g.samples < MIN_UTIL_SAMPLES {
        return None;
    }
    let gpu = g.mean_gpu_util?;
    if gpu < 30.0 {
        return Some(Finding {
            kind: "gpu_idle",
            text: format!(
                "GPU {} ran kernels only {gpu:.0}% of the time (NVML): the job waits on something else, most often data loading, host-side work or copies from pageable memory (see the transfers above)",
                g.index
            ),
         ..Default::default() });
    }
    let memory = g.busy_memory_util?;
    (memory >= 80.0).then(|| Finding {
        kind: "bandwidth_bound",
        text: format!(
            "GPU {}'s memory was busy {memory:.0}% of the time while kernels ran (NVML): the kernels are likely memory-bandwidth bound; fuse operations, use lower precision or larger tiles (NVML cannot see SM activity: confirm with Nsight Compute)",
            g.index
        ),
     ..Default::default() })
}

/// PCIe throughput per GPU over time, for the bandwidth timeline.
pub fn pcie_series(t: &Replayed) -> Vec<BandwidthSeries> {
    let secs = |ns: u64| ns.saturating_sub(t.header.clock_start_ns) as f64 / 1e9;
    let mut out = Vec::new();
    for (index, k) in &t.gpus.tracks {
        for (what, s) in [("PCIe TX", &k.pcie_tx), ("PCIe RX", &k.pcie_rx)] {
            if s.points().iter().any(|p| p.1 > 0) {
                out.push(BandwidthSeries {
                    kind: format!("{what} GPU {index} (NVML)"),
                    points: s
                        .points()
                        .iter()
                        .map(|&(t, v)| (secs(t), v as f64))
                        .collect(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(process: Option<u64>) -> GpuOut {
        GpuOut {
            index: 0,
            name: "GPU".into(),
            uuid: "GPU-1".into(),
            pcie_generation: 5,
            pcie_width: 16,
            numa_node: 0,
            samples: 3,
            total_bytes: 80 << 30,
            peak_used_bytes: 2 << 30,
            peak_process_bytes: process,
            peak_process_time_s: process.map(|_| 1.0),
            mean_gpu_util: None,
            mean_memory_util: None,
            busy_memory_util: None,
        }
    }

    #[test]
    fn idle_bandwidth_bound_and_full_gpus_are_told_apart() {
        let with = |kernels: f64, memory: f64, used: u64| GpuOut {
            mean_gpu_util: Some(kernels),
            mean_memory_util: Some(memory),
            busy_memory_util: Some(memory),
            peak_used_bytes: used,
            samples: 20,
            ..gpu(None)
        };
        let kinds = |g: GpuOut| findings(&[g], 0).iter().map(|f| f.kind).collect::<Vec<_>>();
        assert_eq!(kinds(with(12.0, 5.0, 1 << 30)), vec!["gpu_idle"]);
        assert_eq!(kinds(with(90.0, 93.0, 1 << 30)), vec!["bandwidth_bound"]);
        assert_eq!(
            kinds(with(90.0, 93.0, 79 << 30)),
            vec!["capacity_bound", "bandwidth_bound"]
        );
        assert_eq!(
            kinds(with(12.0, 5.0, 79 << 30)),
            vec!["capacity_bound", "gpu_idle"]
        );
        assert_eq!(kinds(with(90.0, 40.0, 79 << 30)), vec!["capacity_bound"]);
        assert!(
            kinds(with(90.0, 40.0, 1 << 30)).is_empty(),
            "busy, not bound by memory"
        );
        let few = GpuOut {
            samples: 3,
            ..with(12.0, 5.0, 1 << 30)
        };
        assert!(kinds(few).is_empty(), "too few readings to say");
    }

    #[test]
    fn memory_the_driver_counts_beyond_the_calls_seen_is_a_finding() {
        let f = findings(&[gpu(Some(1536 << 20))], 1 << 30);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].text.starts_with("the driver counted up to 1.5 GiB of GPU memory for this process (NVML), against 1.0 GiB at most"),
            "{}",
            f[0].text
        );
        assert!(
            findings(&[gpu(Some(1100 << 20))], 1 << 30).is_empty(),
            "a context's worth is noise"
        );
        assert!(
            findings(&[gpu(None)], 0).is_empty(),
            "no per-process figure, no finding"
        );
    }
}
