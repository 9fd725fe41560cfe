//! What memshim knows of each PyTorch release's caching allocator: which version it is (read from
//! `torch/version.py` beside the library), and for each release whose binary layout was checked,
//! where the hooks and fields are. A release missing from [`known`] is never touched.
//!
//! The numbers for 2.11 were read from the release's own headers, compiled on the H200 with `g++`
//! (`offsetof` on `TraceEntry`, pointer-to-member values for the virtual functions), and agree with
//! a count of the virtual functions in `c10::Allocator`, `c10::DeviceAllocator` and
//! `CUDAAllocator`. They hold for libstdc++'s `std::function` (32 bytes: two words of storage,
//! the manager, the invoker) and `std::string` on x86-64.

/// The mangled name of `c10::cuda::CUDACachingAllocator::allocator`, the
/// `std::atomic<CUDAAllocator*>` through which every caller reaches the allocator.
pub const ALLOCATOR_SYMBOL: &std::ffi::CStr = c"_ZN3c104cuda20CUDACachingAllocator9allocatorE";

/// Virtual-table slots (in pointers) and `TraceEntry` offsets (in bytes) of one release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `bool initialized()`.
    pub initialized: usize,
    /// `void cacheInfo(DeviceIndex device, size_t* largestBlock)`.
    pub cache_info: usize,
    /// `void attachOutOfMemoryObserver(OutOfMemoryObserver)`.
    pub attach_oom_observer: usize,
    /// `void attachAllocatorTraceTracker(AllocatorTraceTracker)`.
    pub attach_trace_tracker: usize,
    /// `std::string name()`.
    pub name: usize,
    /// `TraceEntry::action_` (a 4-byte enum).
    pub action: usize,
    /// `TraceEntry::device_` (a signed byte).
    pub device: usize,
    /// `TraceEntry::addr_`.
    pub addr: usize,
    /// `TraceEntry::stream_`.
    pub stream: usize,
    /// `TraceEntry::size_`.
    pub size: usize,
    /// `sizeof(TraceEntry)`: how many bytes a callback may read.
    pub entry_size: usize,
    /// The values of `TraceEntry::Action`, in the order of [`memshim_trace::TorchAction`]'s
    /// variants (`None` where the release has no such action).
    pub actions: [Option<i32>; 8],
}

/// PyTorch 2.11 (checked on 2.11.0+cu130).
const V2_11: Layout = Layout {
    initialized: 6,
    cache_info: 22,
    attach_oom_observer: 43,
    attach_trace_tracker: 44,
    name: 49,
    action: 0,
    device: 4,
    addr: 8,
    stream: 32,
    size: 40,
    entry_size: 136,
    // ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, SEGMENT_MAP,
    // SEGMENT_UNMAP; SNAPSHOT (7) is not recorded; OOM.
    actions: [
        Some(0),
        Some(1),
        Some(2),
        Some(3),
        Some(4),
        Some(5),
        Some(6),
        Some(8),
    ],
};

/// The releases whose layout was checked, by (major, minor).
const KNOWN: &[((u32, u32), Layout)] = &[((2, 11), V2_11)];

/// The layout of a release, when it was checked.
pub fn known(version: (u32, u32)) -> Option<Layout> {
    KNOWN.iter().find(|(v, _)| *v == version).map(|(_, l)| *l)
}

/// The releases checked, for messages ("2.11").
pub fn known_names() -> String {
    let names: Vec<String> = KNOWN.iter().map(|((a, b), _)| format!("{a}.{b}")).collect();
    names.join(", ")
}

/// The version string in `torch/version.py` (`__version__ = '2.11.0+cu130'`).
pub fn version_string(version_py: &str) -> Option<&str> {
    version_py.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("__version__")?.trim_start();
        let rest = rest.strip_prefix('=')?.trim();
        let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        let inner = &rest[1..];
        Some(&inner[..inner.find(quote)?])
    })
}

/// Major and minor of a version string (`2.11.0+cu130` -> (2, 11)).
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(['.', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor_text = parts.next()?;
    let digits: String = minor_text
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, digits.parse().ok()?))
}

/// The index into [`Layout::actions`] of a raw action value.
pub fn action_index(layout: &Layout, raw: i32) -> Option<usize> {
    layout.actions.iter().position(|a| *a == Some(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_py_that_torch_ships() {
        let text = "from typing import Optional\n\n__all__ = ['__version__', 'debug']\n__version__ = '2.11.0+cu130'\ndebug = False\n";
        assert_eq!(version_string(text), Some("2.11.0+cu130"));
        assert_eq!(major_minor("2.11.0+cu130"), Some((2, 11)));
        assert_eq!(major_minor("2.1.2"), Some((2, 1)));
        assert_eq!(major_minor("2.12.0a0+git1234"), Some((2, 12)));
        assert_eq!(version_string("__version__ = \"2.3.1\"\n"), Some("2.3.1"));
        assert_eq!(version_string("version = '2.3.1'\n"), None);
        assert_eq!(major_minor("nightly"), None);
    }

    #[test]
    fn only_checked_releases_have_a_layout() {
        assert_eq!(known((2, 11)).map(|l| l.attach_trace_tracker), Some(44));
        assert!(known((2, 10)).is_none());
        assert!(known((2, 12)).is_none());
        assert!(known((1, 13)).is_none());
        assert_eq!(known_names(), "2.11");
    }

    #[test]
    fn every_field_read_lies_inside_the_entry_and_is_aligned() {
        for (_, l) in KNOWN {
            for (off, size) in [
                (l.action, 4),
                (l.device, 1),
                (l.addr, 8),
                (l.stream, 8),
                (l.size, 8),
            ] {
                assert!(off + size <= l.entry_size);
                assert_eq!(off % size, 0);
            }
        }
    }

    #[test]
    fn actions_map_onto_the_record_kinds_and_skip_snapshots() {
        let l = known((2, 11)).unwrap();
        assert_eq!(action_index(&l, 0), Some(0));
        assert_eq!(action_index(&l, 6), Some(6));
        assert_eq!(action_index(&l, 7), None);
        assert_eq!(action_index(&l, 8), Some(7));
        assert_eq!(action_index(&l, 9), None);
    }
}
