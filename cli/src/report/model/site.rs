//! The pieces every section of the model is made of: a finding, a call site with its frames, and the
//! live sites of one class of memory.
use serde::Serialize;

use super::frame::FrameOut;

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
    /// Of `bytes` and `count`, what system code allocated once by design and keeps until exit (sites
    /// whose `owner` is `c_library`, `cxx_runtime`, `interpreter`, `go_runtime` or `rust_runtime`).
    pub by_design_bytes: u64,
    pub by_design_count: u64,
    /// Of `bytes` and `count`, what a rule of `--suppressions` matched (sites with `suppressed_by`;
    /// none of them is the driver's or by design).
    pub suppressed_bytes: u64,
    pub suppressed_count: u64,
    /// Of `bytes` and `count`, what was allocated without a sampled stack (not in `sites`).
    pub unsampled_bytes: u64,
    pub unsampled_count: u64,
    /// What the program itself holds: `bytes` and `count` less what the CUDA driver allocated for
    /// itself, what system code keeps by design and what the suppressions matched (see
    /// `report::figures`, which makes this and every figure below from the rest).
    pub program_bytes: u64,
    pub program_count: u64,
    /// `bytes` and `count` less the CUDA driver's own only: the program's, NCCL's, by design and
    /// suppressed together.
    pub non_driver_bytes: u64,
    pub non_driver_count: u64,
    /// Of `sites`: how many are the program's own (see [`Site::is_programs`]), how many the CUDA
    /// driver's.
    pub program_sites: u64,
    pub driver_sites: u64,
    /// The sites kept by design, by owner: largest first (then by owner).
    pub by_design_owners: Vec<ByDesignOwner>,
    /// The sites each `--suppressions` rule matched, in the order of the first site each matched.
    pub suppressed_rules: Vec<SuppressedRule>,
    pub sites: Vec<Site>,
}

impl LeakClass {
    /// The program's own sites, largest first (as `sites` is).
    pub fn sites_of_program(&self) -> impl Iterator<Item = &Site> {
        self.sites.iter().filter(|s| s.is_programs())
    }
}

/// What one owner of memory kept by design holds of a leak class (see `report::by_design`).
#[derive(Serialize, Debug)]
pub struct ByDesignOwner {
    /// An owner of memory kept by design: "c_library", "cxx_runtime", "interpreter" or
    /// "go_runtime", "rust_runtime" (see `Site::owner`).
    pub owner: &'static str,
    /// The owner in words: "the C library".
    pub described: &'static str,
    pub bytes: u64,
    pub count: u64,
    pub sites: u64,
    /// Where its largest site allocated: the innermost frame past the allocator, by its function
    /// (`_IO_file_doallocate`), else by the innermost named frame of the same library, else by its
    /// place; null when the site has no frame past the allocator.
    pub largest_in: Option<String>,
}

/// What one `--suppressions` rule matched of a leak class.
#[derive(Serialize, Debug)]
pub struct SuppressedRule {
    /// The rule, as `Site::suppressed_by` gives it: `leak:PATTERN (FILE:LINE)`.
    pub rule: String,
    pub bytes: u64,
    pub count: u64,
    pub sites: u64,
}

/// One call site: a distinct stack.
#[derive(Serialize, Debug)]
pub struct Site {
    /// "program"; "cuda_driver" when a frame is in the driver's own libraries; "nccl" when a frame is
    /// NCCL's; "c_library", "cxx_runtime", "interpreter", "go_runtime" or "rust_runtime" for memory those keep by design
    /// (see `report::by_design`).
    pub owner: &'static str,
    /// The `--suppressions` rule that matched this site, as `leak:PATTERN (FILE:LINE)`; absent when
    /// none did. A suppressed site is not counted as the program's leak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed_by: Option<String>,
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
    /// The site's name in one line, `function (file:line)` (see `report::site_label`): given for
    /// the sites the first screen names (`heap.peak_sites`), absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The stack, innermost first.
    #[serde(serialize_with = "super::frame_table::indexes")]
    pub frames: Vec<FrameOut>,
}

impl Site {
    /// True when the site counts as the program's own: not the driver's, not kept by design, not
    /// suppressed. NCCL's buffers are the program's (it made the communicators).
    pub fn is_programs(&self) -> bool {
        (self.owner == "program" || self.owner == "nccl") && self.suppressed_by.is_none()
    }
}

/// A scaled estimate from sampled stacks.
#[derive(Serialize, Debug)]
pub struct Estimate {
    pub bytes: u64,
    pub count: u64,
}
