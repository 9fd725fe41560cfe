//! The model of the growth section: call sites whose live memory kept climbing.
use serde::Serialize;

use super::site::*;

/// Call sites whose live memory kept climbing over the run.
#[derive(Serialize, Debug, Default)]
pub struct GrowthSection {
    /// Host heap sites, fastest first.
    pub host: Vec<GrowthSite>,
    /// Device memory sites, fastest first.
    pub device: Vec<GrowthSite>,
    pub findings: Vec<Finding>,
}

/// A growing site.
#[derive(Serialize, Debug)]
pub struct GrowthSite {
    /// Live bytes at the first high-water point, and when (seconds since start).
    pub from_bytes: u64,
    pub from_time_s: f64,
    /// Live bytes at the last high-water point, and when.
    pub to_bytes: u64,
    pub to_time_s: f64,
    /// Growth rate between them.
    pub rate_bytes_per_s: f64,
    /// Live bytes at the end.
    pub live_bytes: u64,
    pub frames: Vec<FrameOut>,
}
