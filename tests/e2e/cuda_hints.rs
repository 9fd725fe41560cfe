//! Managed-memory hints in the forms CUDA 13's runtime calls (`cuMemPrefetchAsync_v2`,
//! `cuMemAdvise_v2`), through the stand-in driver.
use crate::cuda::traced_cuda;
use crate::report::*;
use crate::util::*;

/// CUDA 13's runtime asks for the CUmemLocation forms of the hints: counted as the legacy ones
/// are (on the H200 a program that prefetched was told it made no prefetch calls).
#[test]
fn prefetches_and_advice_through_the_cuda_13_forms_are_counted() {
    let dir = TestDir::new("prefetches_and_advice_through_the_cuda_13_forms");
    let (stdout, report) = traced_cuda(&dir, "hints_v2", &[]);
    assert_eq!(stdout, "done\n");
    let p = process_by_exe(&report, "hints_v2");
    let hints = &p["device"]["managed_hints"];
    assert_eq!(hints["prefetch_calls"], 2, "{}", dump(p));
    assert_eq!(hints["prefetch_bytes"], 3 << 20);
    assert_eq!(hints["advise_calls"], 1);
}
