//! The model of the growth section: call sites whose live memory kept climbing.
use serde::Serialize;

use super::frame::FrameOut;
use super::site::*;

/// Call sites whose live memory kept climbing over the run.
#[derive(Serialize, Debug, Default)]
pub struct GrowthSection {
    /// Host heap sites, fastest first.
    pub host: Vec<GrowthSite>,
    /// Device memory sites, fastest first.
    pub device: Vec<GrowthSite>,
    /// Anonymous-mapping sites (allocator arenas: pymalloc's hold a Python program's small
    /// objects), fastest first.
    pub mappings: Vec<GrowthSite>,
    /// Host heap, anonymous-mapping and device (driver) sites whose memory climbed over most of a
    /// stretch and was given back before the end, largest peak first.
    pub released: Vec<ReleasedSite>,
    pub findings: Vec<Finding>,
}

/// Growth given back before the end.
#[derive(Serialize, Debug)]
pub struct ReleasedSite {
    /// "host" (the heap), "mappings" (anonymous mappings) or "device" (device memory, as the
    /// driver handed it out).
    pub memory: &'static str,
    /// Live bytes at the first high-water point, and when (seconds since start).
    pub from_bytes: u64,
    pub from_time_s: f64,
    /// The highest it reached, and when.
    pub peak_bytes: u64,
    pub peak_time_s: f64,
    /// When it fell below half of that peak.
    pub released_time_s: f64,
    /// Live bytes at the end.
    pub live_bytes: u64,
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
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
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}
