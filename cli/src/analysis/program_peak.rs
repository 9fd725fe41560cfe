//! The program's host memory at its highest: heap blocks and anonymous mappings together (an
//! allocator's arenas, pymalloc's among them, are anonymous mappings), watched after every event
//! that can raise either. It only keeps the highest sum and what made it up; it never judges it.

/// The highest heap + anonymous mappings seen, and its parts.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramPeak {
    /// Heap and mappings together, at the highest.
    pub bytes: u64,
    /// Of that, heap blocks and anonymous mappings.
    pub heap_bytes: u64,
    pub mapped_bytes: u64,
    /// When (clock ns).
    pub t: u64,
}

impl ProgramPeak {
    /// Notes the live heap and mapped bytes at `t`.
    pub fn observe(&mut self, t: u64, heap: u64, mapped: u64) {
        let sum = heap + mapped;
        if sum > self.bytes {
            *self = ProgramPeak {
                bytes: sum,
                heap_bytes: heap,
                mapped_bytes: mapped,
                t,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_highest_sum_and_its_parts() {
        let mut p = ProgramPeak::default();
        p.observe(1, 100, 0);
        p.observe(2, 50, 4096);
        p.observe(3, 4000, 100);
        assert_eq!(
            p,
            ProgramPeak {
                bytes: 4146,
                heap_bytes: 50,
                mapped_bytes: 4096,
                t: 2
            }
        );
    }
}
