//! The job around the process: its rank in a distributed job, and the GPUs NVML sees.
use serde::{Deserialize, Serialize};

/// One GPU, by NVML's index (not CUDA's ordinal, which `CUDA_VISIBLE_DEVICES` renumbers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML's index.
    pub index: u32,
    /// Its name (`NVIDIA H200`).
    pub name: String,
    /// Its UUID (`GPU-...`).
    pub uuid: String,
    /// The current PCIe link generation (0 when unknown).
    pub pcie_generation: u32,
    /// The current PCIe link width, lanes (0 when unknown).
    pub pcie_width: u32,
    /// The NUMA node of its PCIe slot, -1 when unknown.
    pub numa_node: i32,
}

/// NVML's reading of one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSample {
    /// NVML's index.
    pub index: u32,
    /// Memory in use on the whole device, by every process.
    pub used_bytes: u64,
    /// The device's memory.
    pub total_bytes: u64,
    /// Memory the driver counts for this process, when it tells.
    pub process_bytes: Option<u64>,
    /// PCIe throughput out of the GPU over NVML's last sampling window, bytes per second.
    pub pcie_tx_bytes_per_s: Option<u64>,
    /// PCIe throughput into the GPU, bytes per second.
    pub pcie_rx_bytes_per_s: Option<u64>,
    /// Percent of the last sample period in which a kernel ran (NVML's GPU utilisation).
    pub gpu_util: Option<u32>,
    /// Percent of the last sample period in which device memory was read or written.
    pub memory_util: Option<u32>,
}

/// Which rank of a distributed job a process is, as its launcher told it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    /// The global rank.
    pub rank: u32,
    /// The rank on its host, when the launcher says.
    pub local_rank: Option<u32>,
    /// How many ranks the job has, when the launcher says.
    pub world_size: Option<u32>,
    /// Where the numbers came from: `torchrun`, `env` (RANK set by hand or another launcher),
    /// `openmpi`, `pmi`, `slurm`.
    pub launcher: String,
}
