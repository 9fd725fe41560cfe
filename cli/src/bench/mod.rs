//! `memshim bench`: this machine's ceilings, measured once and stored, so reports can say how far
//! achieved bandwidth is from what the hardware does: host memory bandwidth (a STREAM triad, one
//! thread and all threads) and, where a GPU is present, copy bandwidth host-to-device and back from
//! pageable and from pinned memory, and device-to-device.
pub mod ceilings;
pub mod gpu;
pub mod host;
