//! Whose memory is it: the program's, NCCL's, or the CUDA driver's own. The driver allocates host
//! memory and maps large address ranges for itself during `cuInit`, module loading and launches; those
//! stay until exit by design and are not the program's leaks. A site is the driver's when a frame of
//! its stack is in the driver's libraries (`libcuda.so*`, `libnvidia-*`, `libcupti*`); else NCCL's when a frame is
//! in `libnccl*` or is an `nccl*` function (NCCL linked statically): its buffers and communicators,
//! which a distributed job keeps for its whole life; else a system library's one-time memory (see
//! `by_design`).
use super::model::FrameOut;

/// The owner of a host or mapping site.
pub fn owner(frames: &[FrameOut]) -> &'static str {
    owner_by(frames, traits)
}

/// What [`owner`] reads of one frame, on its own (see `by_design::Traits`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traits {
    driver: bool,
    nccl: bool,
    by_design: super::by_design::Traits,
}

/// The [`Traits`] of one frame.
pub fn traits(f: &FrameOut) -> Traits {
    Traits {
        driver: module_base(f).is_some_and(is_driver_module),
        nccl: module_base(f).is_some_and(|m| m.starts_with("libnccl"))
            || f.function
                .as_deref()
                .is_some_and(|func| is_api_name(func, "nccl")),
        by_design: super::by_design::traits(f),
    }
}

/// As [`owner`], of frames in any form whose [`Traits`] `traits` gives.
pub fn owner_by<T>(frames: &[T], traits: impl Fn(&T) -> Traits) -> &'static str {
    if frames.iter().any(|f| traits(f).driver) {
        "cuda_driver"
    } else if frames.iter().any(|f| traits(f).nccl) {
        "nccl"
    } else {
        super::by_design::owner_by(frames, |f| traits(f).by_design).unwrap_or("program")
    }
}

/// The first frame that is the program's own code, not the CUDA runtime or driver (for one-line
/// attributions such as "failed in try_big"); in a Python process, the innermost Python frame.
pub fn first_program_function(frames: &[FrameOut]) -> Option<&str> {
    frames
        .iter()
        .find(|f| f.kind == "python")
        .or_else(|| {
            frames
                .iter()
                .find(|f| !is_runtime_frame(f) && f.function.is_some())
        })
        .and_then(|f| f.function.as_deref())
}

fn is_runtime_frame(f: &FrameOut) -> bool {
    if module_base(f).is_some_and(|m| is_driver_module(m) || m.starts_with("libcudart")) {
        return true;
    }
    let Some(func) = f.function.as_deref() else {
        return false;
    };
    // The static runtime lives inside the executable: recognise it by its names.
    func.starts_with("cudart::")
        || func.starts_with("libcudart_static_")
        || func.starts_with("__cudart")
        || is_api_name(func, "cuda")
        || is_api_name(func, "cu")
}

/// `cudaMalloc`, `cuMemAlloc_v2`: the prefix followed by an upper-case letter.
fn is_api_name(func: &str, prefix: &str) -> bool {
    func.strip_prefix(prefix)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase())
}

/// The driver's libraries, and CUPTI's (loaded by memshim itself with `MEMSHIM_CUPTI=1`, whose
/// worker threads allocate for their own bookkeeping).
fn is_driver_module(base: &str) -> bool {
    base.starts_with("libcuda.so") || base.starts_with("libnvidia-") || base.starts_with("libcupti")
}

fn module_base(f: &FrameOut) -> Option<&str> {
    f.module
        .as_deref()
        .map(|m| m.rsplit('/').next().unwrap_or(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, module: &str) -> FrameOut {
        FrameOut {
            kind: "native",
            function: Some(function.into()),
            file: None,
            line: None,
            module: Some(module.into()),
            address: "0x1".into(),
            main_thread: false,
            offset: None,
            hidden: None,
            short_file: None,
        }
    }

    #[test]
    fn driver_sites_and_program_frames() {
        let driver = [
            frame("malloc", "/lib/libc.so.6"),
            frame("0x", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            frame("main", "/app/prog"),
        ];
        assert_eq!(owner(&driver), "cuda_driver");
        assert_eq!(owner(&driver[2..]), "program");
        let failure = [
            frame("libcudart_static_4d8b", "/app/prog"),
            frame("cudaMalloc", "/app/prog"),
            frame("try_big", "/app/prog"),
            frame("main", "/app/prog"),
        ];
        assert_eq!(first_program_function(&failure), Some("try_big"));
        assert_eq!(first_program_function(&failure[3..]), Some("main"));
        assert!(!is_api_name("cudagraph_helper", "cuda"));
    }

    #[test]
    fn nccl_sites_by_library_or_by_name() {
        let shared = [
            frame("??", "/usr/lib/libnccl.so.2"),
            frame("main", "/app/prog"),
        ];
        assert_eq!(owner(&shared), "nccl");
        let static_link = [
            frame("ncclCommInitRank", "/torch/lib/libtorch_cuda.so"),
            frame("main", "/app/prog"),
        ];
        assert_eq!(owner(&static_link), "nccl");
        assert_eq!(
            owner(&[frame("nccl_helper_of_mine", "/app/prog")]),
            "program"
        );
        let in_driver = [
            frame("??", "/usr/lib/libcuda.so.1"),
            frame("ncclCommInitRank", "/usr/lib/libnccl.so.2"),
        ];
        assert_eq!(owner(&in_driver), "cuda_driver");
    }
}
