//! The pieces every section of the model is made of: a finding, a call site with its frames, and the
//! live sites of one class of memory.
use serde::Serialize;

/// A conclusion.
#[derive(Serialize, Debug, Default, Clone)]
pub struct Finding {
    /// A short, stable identifier.
    pub kind: &'static str,
    /// The conclusion and its evidence, in plain words.
    pub text: String,
    /// How much it matters: "high", "medium", "low", or "info" for a note about the machine or
    /// the measurement rather than the program (see `report::severity`).
    pub severity: &'static str,
    /// The bytes at stake, where the finding is about an amount of memory.
    pub bytes: Option<u64>,
    /// The call site it names (the first frame of the program's own code, `function (file:line)`).
    pub site: Option<String>,
}

/// Leaks of one kind.
#[derive(Serialize, Debug, Default)]
pub struct LeakClass {
    pub bytes: u64,
    pub count: u64,
    /// Of `bytes` and `count`, what the CUDA driver allocated for itself (see `Site::owner`).
    pub driver_bytes: u64,
    pub driver_count: u64,
    /// Of `bytes` and `count`, what was allocated without a sampled stack (not in `sites`).
    pub unsampled_bytes: u64,
    pub unsampled_count: u64,
    pub sites: Vec<Site>,
}

impl LeakClass {
    /// What the program itself holds: `bytes` less what the CUDA driver allocated for itself.
    pub fn program_bytes(&self) -> u64 {
        self.bytes - self.driver_bytes
    }

    /// As [`LeakClass::program_bytes`], in blocks.
    pub fn program_count(&self) -> u64 {
        self.count - self.driver_count
    }
}

/// One call site: a distinct stack.
#[derive(Serialize, Debug)]
pub struct Site {
    /// "program"; "cuda_driver" when a frame is in the driver's own libraries; "nccl" when a frame is
    /// NCCL's.
    pub owner: &'static str,
    /// Bytes still live from here.
    pub bytes: u64,
    /// Blocks still live from here.
    pub count: u64,
    /// Blocks allocated here over the run.
    pub allocations: u64,
    /// Bytes allocated here over the run.
    pub allocated_bytes: u64,
    /// With sampling: what this site's sampled blocks stand for (an estimate); null otherwise.
    pub estimated: Option<Estimate>,
    /// The stack, innermost first.
    pub frames: Vec<FrameOut>,
}

/// A scaled estimate from sampled stacks.
#[derive(Serialize, Debug)]
pub struct Estimate {
    pub bytes: u64,
    pub count: u64,
}

/// One frame.
#[derive(Serialize, Debug, Clone)]
pub struct FrameOut {
    /// "native" (or "python" for interpreter frames).
    pub kind: &'static str,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub module: Option<String>,
    /// The return address, as hex.
    pub address: String,
    /// Present (true) on a Python frame of the main thread, lent to a native thread that ran no
    /// Python code (PyTorch's autograd engine during `backward()`, say).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub main_thread: bool,
}
