//! The model of the transfers section and its bandwidth series.
use serde::Serialize;

use super::frame::FrameOut;
use super::site::*;

/// Bandwidth of one kind of copy over time.
#[derive(Serialize, Debug)]
pub struct BandwidthSeries {
    /// "HtoD pageable", "DtoH pinned", ...
    pub kind: String,
    /// [interval start in seconds since start, bytes per second].
    pub points: Vec<(f64, f64)>,
}

/// Copies between host and device.
#[derive(Serialize, Debug, Default)]
pub struct TransfersSection {
    /// One row per (direction, host memory).
    pub summary: Vec<TransferRow>,
    /// Copies and bytes of every row of `summary`, together.
    pub copies: u64,
    pub bytes: u64,
    /// Call sites, largest by bytes first.
    pub sites: Vec<TransferSite>,
    /// Copies by size: `{le_bytes, count}`; the last bucket has `le_bytes` null.
    pub histogram: Vec<SizeBucket>,
    /// Copies that failed.
    pub failed: u64,
    /// True when this machine's transfer ceilings were measured (`memshim bench`).
    pub ceilings_measured: bool,
    pub findings: Vec<Finding>,
}

/// A group of copies.
#[derive(Serialize, Debug)]
pub struct TransferRow {
    /// HtoD, DtoH, DtoD or HtoH.
    pub direction: &'static str,
    /// pageable, pinned, registered, managed or device.
    pub host_memory: &'static str,
    pub count: u64,
    pub bytes: u64,
    /// Time of the synchronous copies (their transfer time); null when there were none.
    pub seconds: Option<f64>,
    /// Bandwidth of the synchronous copies, in GB/s (1e9 bytes per second).
    pub gbps: Option<f64>,
    /// What `memshim bench` measured on this host for this kind of copy; null when not measured.
    pub ceiling_gbps: Option<f64>,
    /// Asynchronous copies, and how long their calls blocked the caller.
    pub async_count: u64,
    pub async_blocked_seconds: f64,
    /// Asynchronous copies timed on the GPU with events (those of `MEMSHIM_COPY_EVENT_BYTES`, 64 KiB
    /// by default, or more), their GPU time, and their bandwidth in GB/s; null when none was timed.
    pub gpu_timed_count: u64,
    pub gpu_seconds: Option<f64>,
    pub gpu_gbps: Option<f64>,
}

/// A call site of copies.
#[derive(Serialize, Debug)]
pub struct TransferSite {
    pub direction: &'static str,
    pub host_memory: &'static str,
    pub count: u64,
    pub bytes: u64,
    pub seconds: Option<f64>,
    pub async_count: u64,
    pub async_blocked_seconds: f64,
    /// As in the summary rows.
    pub gpu_timed_count: u64,
    pub gpu_gbps: Option<f64>,
    /// Copies of at most 4 KiB made here.
    pub small_count: u64,
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}

/// One bucket of the copy-size histogram.
#[derive(Serialize, Debug)]
pub struct SizeBucket {
    pub le_bytes: Option<u64>,
    pub count: u64,
}
