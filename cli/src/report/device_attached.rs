//! What the device section can and cannot show of a process memshim attached to with the CUDA driver
//! loaded: the driver's calls after attach are seen only through CUPTI's callbacks (the CUDA runtime
//! fetched the driver's entry points long before, past the shim), and what was in use before attach
//! is a starting point the trace cannot break down. One info finding says which, with the device
//! memory already in use at attach.
use memshim_trace::{AttachedCuda, DeviceAtAttach};

use super::model::Finding;
use crate::replay::Replayed;
use crate::units::human_bytes;

/// The finding, for a process attached to with the CUDA driver loaded.
pub fn finding(t: &Replayed) -> Option<Finding> {
    t.attached.as_ref()?;
    let loaded = |name: &str| {
        t.modules.iter().any(|m| {
            m.module
                .path
                .rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with(name))
        })
    };
    if !loaded("libcuda.so") {
        return None;
    }
    let at_attach = t.attached_cuda.as_ref().map(|a| in_use(&a.devices));
    let start = at_attach.as_ref().and_then(|(text, _)| text.clone());
    let bytes = at_attach.and_then(|(_, b)| b);
    if let Some(a) = t.attached_cuda.as_ref().filter(|a| a.seen) {
        return Some(seen(a, start, bytes));
    }
    // PyTorch's allocator is reached from the inside at attach (see the torch section).
    let torch_on = t.torch.state.as_ref().is_some_and(|s| s.enabled);
    let what = if loaded("libc10_cuda.so") && !torch_on {
        "device memory, copies, pinned host memory and PyTorch's allocator"
    } else {
        "device memory, copies and pinned host memory"
    };
    let why = match &t.attached_cuda {
        Some(a) => format!(
            "CUPTI's driver callbacks, which see them, could not be used: {}",
            a.detail
        ),
        // A trace of a memshim without CUPTI after attach, or one that detached before CUPTI answered.
        None => "the CUDA runtime fetched the driver's entry points long before, past memshim"
            .to_string(),
    };
    let mut text = format!(
        "memshim was attached to a process with the CUDA driver loaded, and the driver's memory calls and copies after attach are not in this trace: {why}; so {what} are not shown (trace the program from its start with memshim run to see them)"
    );
    if let Some(s) = start {
        text.push_str(&format!("; {s}"));
    }
    Some(Finding {
        kind: "attached_cuda_unseen",
        text,
        severity: "info",
        bytes,
        site: None,
    })
}

fn seen(a: &AttachedCuda, start: Option<String>, bytes: Option<u64>) -> Finding {
    let mut text = format!(
        "memshim was attached to a process with the CUDA driver loaded and sees the driver's memory calls and copies after attach through CUPTI's callbacks ({})",
        a.detail
    );
    match start {
        Some(s) => text.push_str(&format!(
            "; {s}: what was allocated before is not in the device figures, and its frees are not subtracted"
        )),
        None => text.push_str(
            "; what was allocated before attach is not in the device figures (the driver could not say how much), and its frees are not subtracted",
        ),
    }
    Finding {
        kind: "attached_cuda_start",
        text,
        severity: "info",
        bytes,
        site: None,
    }
}

/// "3.0 MiB were already allocated on GPU 0 at attach (...)", and the bytes: this process's by
/// NVML where it says, else the whole device's by the driver. `None` when no GPU could be asked.
fn in_use(devices: &[DeviceAtAttach]) -> (Option<String>, Option<u64>) {
    let parts: Vec<(String, u64)> = devices
        .iter()
        .filter(|d| d.used_bytes > 0 || d.process_bytes.is_some())
        .map(|d| match d.process_bytes {
            Some(own) => (
                format!(
                    "{} on GPU {} (this process's, by NVML; {} in use on the device by every process, of {})",
                    human_bytes(own),
                    d.device,
                    human_bytes(d.used_bytes),
                    human_bytes(d.total_bytes)
                ),
                own,
            ),
            None => (
                format!(
                    "{} on GPU {} (in use on the device by every process, by cuMemGetInfo, of {})",
                    human_bytes(d.used_bytes),
                    d.device,
                    human_bytes(d.total_bytes)
                ),
                d.used_bytes,
            ),
        })
        .collect();
    if parts.is_empty() {
        return (None, None);
    }
    let total: u64 = parts.iter().map(|p| p.1).sum();
    let list: Vec<String> = parts.into_iter().map(|p| p.0).collect();
    (
        Some(format!(
            "{} were already allocated at attach: {}",
            human_bytes(total),
            list.join(", ")
        )),
        Some(total),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(device: i32, used: u64, own: Option<u64>) -> DeviceAtAttach {
        DeviceAtAttach {
            device,
            used_bytes: used,
            total_bytes: 80 << 30,
            process_bytes: own,
        }
    }

    #[test]
    fn nvml_s_own_figure_is_preferred_and_summed_over_gpus() {
        let (text, bytes) = in_use(&[dev(0, 3 << 30, Some(2 << 30)), dev(1, 1 << 30, None)]);
        assert_eq!(bytes, Some(3 << 30));
        assert_eq!(
            text.unwrap(),
            "3.0 GiB were already allocated at attach: 2.0 GiB on GPU 0 (this process's, by NVML; 3.0 GiB in use on the device by every process, of 80.0 GiB), 1.0 GiB on GPU 1 (in use on the device by every process, by cuMemGetInfo, of 80.0 GiB)"
        );
    }

    #[test]
    fn a_gpu_the_driver_could_not_be_asked_about_says_nothing() {
        assert_eq!(in_use(&[dev(0, 0, None)]), (None, None));
        assert_eq!(in_use(&[]), (None, None));
    }
}
