//! Events by record kind. Heap allocations and frees are nearly every event of a large trace, so
//! they are counted in plain fields: hashing a kind's name per event cost about as much as the rest
//! of a free's bookkeeping. Every other kind is counted by its name.
use memshim_trace::Record;
use rustc_hash::FxHashMap as HashMap;

/// The running counts.
#[derive(Debug, Default, Clone)]
pub struct KindCounts {
    allocs: u64,
    frees: u64,
    others: HashMap<&'static str, u64>,
}

impl KindCounts {
    /// Counts `record`.
    pub fn add(&mut self, record: &Record) {
        match record {
            Record::Alloc(_) => self.allocs += 1,
            Record::Free(_) => self.frees += 1,
            other => *self.others.entry(other.kind_name()).or_default() += 1,
        }
    }

    /// Every kind seen, by its [`Record::kind_name`], with its count (kinds never seen are absent).
    pub fn into_map(self) -> HashMap<&'static str, u64> {
        let mut all = self.others;
        for (n, name) in [(self.allocs, "alloc"), (self.frees, "free")] {
            if n > 0 {
                all.insert(name, n);
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memshim_trace::{Alloc, AllocFn, Free};

    #[test]
    fn counts_as_naming_each_event_would() {
        let alloc = Record::Alloc(Alloc {
            func: AllocFn::Malloc,
            addr: 16,
            size: 8,
            stack: 1,
        });
        let free = Record::Free(Free {
            addr: 16,
            realloc: false,
        });
        let records = [alloc.clone(), free, alloc, Record::Dropped(3)];
        let mut k = KindCounts::default();
        let mut naive = HashMap::<&'static str, u64>::default();
        for r in &records {
            k.add(r);
            *naive.entry(r.kind_name()).or_default() += 1;
        }
        assert_eq!(k.into_map(), naive);
        assert!(KindCounts::default().into_map().is_empty());
    }
}
