//! NVML readings of the GPUs while a CUDA program runs: each GPU once (name, UUID, PCIe link, NUMA
//! node), then every few ticks of the sampler its memory in use (by the whole device and by this
//! process, as the driver counts it), its PCIe throughput and its GPU and memory utilisation.
//!
//! NVML is `dlopen`ed from the sampler thread only once the process has made a CUDA call, so a program
//! without CUDA never loads it; a machine without it records nothing. A dozen functions are resolved by
//! hand rather than through a wrapper crate: the shim runs in every traced process and stays small.
//! Never: called from a traced thread, or retried after NVML failed to start.
//!
//! # Safety
//! Every NVML function is looked up by its exported name in the library `dlopen` returned (which
//! stays loaded for the process's life) and called with that export's C signature, with pointers to
//! locals of the sizes NVML's headers give. Only the sampler thread holds the handles.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};

use memshim_trace::{GpuInfo, GpuSample};

use crate::sys::real::function;

type Device = *mut c_void;

#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// `NVML_VALUE_NOT_AVAILABLE`.
const NOT_AVAILABLE: c_ulonglong = c_ulonglong::MAX;
/// Most processes asked about per GPU.
const MAX_PROCESSES: usize = 256;

/// The functions used, resolved from `libnvidia-ml.so.1`.
struct Api {
    count: unsafe extern "C" fn(*mut c_uint) -> c_int,
    handle: unsafe extern "C" fn(c_uint, *mut Device) -> c_int,
    name: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int,
    uuid: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int,
    memory: unsafe extern "C" fn(Device, *mut Memory) -> c_int,
    processes: Option<unsafe extern "C" fn(Device, *mut c_uint, *mut ProcessInfo) -> c_int>,
    pcie: Option<unsafe extern "C" fn(Device, c_int, *mut c_uint) -> c_int>,
    link_gen: Option<unsafe extern "C" fn(Device, *mut c_uint) -> c_int>,
    link_width: Option<unsafe extern "C" fn(Device, *mut c_uint) -> c_int>,
    pci: Option<unsafe extern "C" fn(Device, *mut PciInfo) -> c_int>,
    utilization: Option<unsafe extern "C" fn(Device, *mut Utilization) -> c_int>,
}

/// A started NVML and the GPUs it sees.
pub struct Nvml {
    api: Api,
    devices: Vec<Device>,
    pid: u32,
}

// SAFETY: NVML handles are process-wide and NVML is thread-safe; the sampler thread alone uses them.
unsafe impl Send for Nvml {}

impl Nvml {
    /// Loads and starts NVML; `None` when the machine has none or it does not start.
    pub fn start(pid: u32) -> Option<Nvml> {
        // The library stays loaded for the life of the process.
        let lib = crate::sys::real::dlopen(c"libnvidia-ml.so.1", libc::RTLD_NOW | libc::RTLD_LOCAL);
        if lib.is_null() {
            return None;
        }
        // Attached, what NVML allocates must stay the C library's (see `attach::got::keep_out`).
        crate::attach::got::keep_out(lib);
        // Each `func` below names the C signature of the NVML function of that name, in every NVML
        // that exports the name.
        // SAFETY: nvmlInit_v2 is `nvmlReturn_t nvmlInit_v2(void)`.
        let init: unsafe extern "C" fn() -> c_int = unsafe { function(lib, c"nvmlInit_v2") }?;
        // SAFETY: nvmlInit_v2 takes no arguments.
        if unsafe { init() } != 0 {
            return None;
        }
        // SAFETY: each field's type is that function's C signature (see above).
        let api = unsafe {
            Api {
                count: function(lib, c"nvmlDeviceGetCount_v2")?,
                handle: function(lib, c"nvmlDeviceGetHandleByIndex_v2")?,
                name: function(lib, c"nvmlDeviceGetName")?,
                uuid: function(lib, c"nvmlDeviceGetUUID")?,
                memory: function(lib, c"nvmlDeviceGetMemoryInfo")?,
                processes: function(lib, c"nvmlDeviceGetComputeRunningProcesses_v3"),
                pcie: function(lib, c"nvmlDeviceGetPcieThroughput"),
                link_gen: function(lib, c"nvmlDeviceGetCurrPcieLinkGeneration"),
                link_width: function(lib, c"nvmlDeviceGetCurrPcieLinkWidth"),
                pci: function(lib, c"nvmlDeviceGetPciInfo_v3"),
                utilization: function(lib, c"nvmlDeviceGetUtilizationRates"),
            }
        };
        let mut n: c_uint = 0;
        // SAFETY: `n` is writable.
        if unsafe { (api.count)(&mut n) } != 0 {
            return None;
        }
        let devices = (0..n.min(64))
            .filter_map(|i| {
                let mut d: Device = std::ptr::null_mut();
                // SAFETY: `d` is writable; `i` is below the count.
                (unsafe { (api.handle)(i, &mut d) } == 0).then_some(d)
            })
            .collect();
        Some(Nvml { api, devices, pid })
    }

    /// Each GPU, once.
    pub fn describe(&self) -> Vec<GpuInfo> {
        self.devices
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let text = |f: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int| {
                    let mut buf = [0 as c_char; 96];
                    // SAFETY: the buffer's length is passed; NVML writes a NUL-terminated string.
                    if unsafe { f(d, buf.as_mut_ptr(), buf.len() as c_uint) } != 0 {
                        return String::new();
                    }
                    // SAFETY: NUL-terminated within the buffer (NVML's contract, and it was zeroed).
                    unsafe { CStr::from_ptr(buf.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                };
                let number = |f: Option<unsafe extern "C" fn(Device, *mut c_uint) -> c_int>| {
                    let mut v: c_uint = 0;
                    // SAFETY: `v` is writable.
                    f.filter(|f| unsafe { f(d, &mut v) } == 0).map_or(0, |_| v)
                };
                GpuInfo {
                    index: i as u32,
                    name: text(self.api.name),
                    uuid: text(self.api.uuid),
                    pcie_generation: number(self.api.link_gen),
                    pcie_width: number(self.api.link_width),
                    numa_node: self.numa_node(d),
                }
            })
            .collect()
    }

    /// The GPU's NUMA node from sysfs, by its PCI address; -1 when unknown.
    fn numa_node(&self, d: Device) -> i32 {
        let Some(pci) = self.api.pci else { return -1 };
        // SAFETY: PciInfo is plain data, filled by NVML.
        let mut info: PciInfo = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is writable and of NVML's v3 layout.
        if unsafe { pci(d, &mut info) } != 0 {
            return -1;
        }
        // SAFETY: NUL-terminated within the zeroed 32-byte field.
        let bus = unsafe { CStr::from_ptr(info.bus_id.as_ptr()) }
            .to_string_lossy()
            .to_lowercase();
        // NVML writes an 8-digit domain ("00000000:19:00.0"); sysfs uses 4 ("0000:19:00.0").
        let short = bus.get(bus.len().saturating_sub(12)..).unwrap_or("");
        std::fs::read_to_string(format!("/sys/bus/pci/devices/{short}/numa_node"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1)
    }

    /// One reading of every GPU.
    pub fn sample(&self) -> Vec<GpuSample> {
        self.devices
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let mut m = Memory::default();
                // SAFETY: `m` is writable and of NVML's v1 layout.
                let ok = unsafe { (self.api.memory)(d, &mut m) } == 0;
                let pcie = |counter: c_int| {
                    let mut kb: c_uint = 0;
                    let f = self.api.pcie?;
                    // SAFETY: `kb` is writable; counter 0 is TX, 1 is RX.
                    (unsafe { f(d, counter, &mut kb) } == 0).then_some(u64::from(kb) * 1024)
                };
                let mut u = Utilization::default();
                let util = self
                    .api
                    .utilization
                    // SAFETY: `u` is writable and of NVML's layout.
                    .filter(|f| unsafe { f(d, &mut u) } == 0)
                    .map(|_| (u.gpu, u.memory));
                GpuSample {
                    index: i as u32,
                    gpu_util: util.map(|u| u.0),
                    memory_util: util.map(|u| u.1),
                    used_bytes: if ok { m.used } else { 0 },
                    total_bytes: if ok { m.total } else { 0 },
                    process_bytes: self.process_bytes(d),
                    pcie_tx_bytes_per_s: pcie(0),
                    pcie_rx_bytes_per_s: pcie(1),
                }
            })
            .collect()
    }

    /// What the driver says this process uses on the GPU, when it says.
    fn process_bytes(&self, d: Device) -> Option<u64> {
        let f = self.api.processes?;
        let mut list = [ProcessInfo::default(); MAX_PROCESSES];
        let mut n = MAX_PROCESSES as c_uint;
        // SAFETY: `list` holds `n` entries of NVML's v2 process layout.
        if unsafe { f(d, &mut n, list.as_mut_ptr()) } != 0 {
            return None;
        }
        list[..(n as usize).min(MAX_PROCESSES)]
            .iter()
            .find(|p| p.pid == self.pid && p.used_gpu_memory != NOT_AVAILABLE)
            .map(|p| p.used_gpu_memory)
    }
}
