//! NVML's view of the GPUs: the most memory the driver counted for this process and for the whole
//! device, and PCIe throughput over time, to set beside what the shim accounted and copied.
use std::collections::BTreeMap;

use memshim_trace::{GpuInfo, GpuSample};

use super::timeline::Series;

/// One GPU's readings.
#[derive(Debug, Default)]
pub struct Track {
    pub samples: u64,
    pub total_bytes: u64,
    /// (time, bytes) of the most memory in use on the device, by every process.
    pub peak_used: (u64, u64),
    /// (time, bytes) of the most the driver counted for this process, when it said.
    pub peak_process: Option<(u64, u64)>,
    /// PCIe throughput out of and into the GPU, bytes per second.
    pub pcie_tx: Series,
    pub pcie_rx: Series,
    /// Memory the driver counted for this process over time, when it said.
    pub process: Series,
    /// True from the first reading in which the driver counted memory for this process: the
    /// utilisation sums start there, so the seconds an interpreter spends importing before it makes a
    /// CUDA context do not make a busy GPU look idle.
    pub active: bool,
    /// Readings with utilisation, and the sums of GPU and memory utilisation (percent) over them.
    pub util_samples: u64,
    pub gpu_util_sum: u64,
    pub memory_util_sum: u64,
    /// The sums over readings in which a kernel ran at all (GPU utilisation above 0).
    pub busy_samples: u64,
    pub busy_memory_util_sum: u64,
}

/// The GPUs NVML described and what it read.
#[derive(Debug, Default)]
pub struct Gpus {
    pub info: Vec<GpuInfo>,
    pub tracks: BTreeMap<u32, Track>,
}

impl Gpus {
    /// One reading of every GPU, at `t`.
    pub fn sample(&mut self, t: u64, samples: &[GpuSample]) {
        for s in samples {
            let k = self.tracks.entry(s.index).or_default();
            k.samples += 1;
            k.total_bytes = s.total_bytes;
            if s.used_bytes > k.peak_used.1 {
                k.peak_used = (t, s.used_bytes);
            }
            if let Some(b) = s.process_bytes {
                if b > 0 && !k.active {
                    k.active = true;
                    k.util_samples = 0;
                    k.gpu_util_sum = 0;
                    k.memory_util_sum = 0;
                    k.busy_samples = 0;
                    k.busy_memory_util_sum = 0;
                }
                if k.peak_process.is_none_or(|(_, p)| b > p) {
                    k.peak_process = Some((t, b));
                }
                k.process.push(t, b);
            }
            if let (Some(g), Some(m)) = (s.gpu_util, s.memory_util) {
                k.util_samples += 1;
                k.gpu_util_sum += u64::from(g);
                k.memory_util_sum += u64::from(m);
                if g > 0 {
                    k.busy_samples += 1;
                    k.busy_memory_util_sum += u64::from(m);
                }
            }
            if let Some(v) = s.pcie_tx_bytes_per_s {
                k.pcie_tx.push(t, v);
            }
            if let Some(v) = s.pcie_rx_bytes_per_s {
                k.pcie_rx.push(t, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(used: u64, process: Option<u64>, tx: u64) -> GpuSample {
        GpuSample {
            index: 0,
            used_bytes: used,
            total_bytes: 1000,
            process_bytes: process,
            pcie_tx_bytes_per_s: Some(tx),
            pcie_rx_bytes_per_s: None,
            gpu_util: Some(tx as u32 * 10),
            memory_util: Some(50),
        }
    }

    #[test]
    fn peaks_and_throughput_per_gpu() {
        let mut g = Gpus::default();
        g.sample(10, &[sample(100, Some(50), 7)]);
        g.sample(20, &[sample(300, None, 9)]);
        g.sample(30, &[sample(200, Some(80), 8)]);
        let k = &g.tracks[&0];
        assert_eq!(k.samples, 3);
        assert_eq!(k.peak_used, (20, 300));
        assert_eq!(k.peak_process, Some((30, 80)));
        assert_eq!(k.pcie_tx.points(), &[(10, 7), (20, 9), (30, 8)]);
        assert!(k.pcie_rx.points().is_empty());
        assert_eq!(k.process.points(), &[(10, 50), (30, 80)]);
        assert_eq!(
            (k.util_samples, k.gpu_util_sum, k.memory_util_sum),
            (3, 240, 150)
        );
        assert_eq!((k.busy_samples, k.busy_memory_util_sum), (3, 150));
    }

    #[test]
    fn utilisation_counts_from_the_process_first_holding_device_memory() {
        let mut g = Gpus::default();
        // Two readings while the program imports (no context yet), idle; then two busy ones.
        g.sample(10, &[sample(100, None, 0)]);
        g.sample(20, &[sample(100, Some(0), 0)]);
        g.sample(30, &[sample(200, Some(80), 9)]);
        g.sample(40, &[sample(200, Some(80), 8)]);
        let k = &g.tracks[&0];
        assert!(k.active);
        assert_eq!(k.samples, 4);
        assert_eq!((k.util_samples, k.gpu_util_sum), (2, 170));
        assert_eq!(k.busy_samples, 2);
    }
}
