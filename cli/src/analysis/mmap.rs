//! Anonymous mappings: ranges still mapped at the end, by the site that mapped them. munmap may cut a
//! range anywhere, so ranges are kept as an interval map and split as needed. A mapping without
//! access (`PROT_NONE`) is an address reservation, not memory.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{Map, MapFn, Unmap};

use super::SiteStats;

#[derive(Clone, Copy, Debug)]
struct Range {
    end: u64,
    stack: u32,
}

/// The mapping analysis state.
#[derive(Default, Debug)]
pub struct Mappings {
    ranges: BTreeMap<u64, Range>,
    sites: HashMap<u32, SiteStats>,
    last_unmap_hit: HashMap<u32, bool>,
    /// Mappings created.
    pub maps: u64,
    /// Bytes mapped now.
    pub live_bytes: u64,
    /// The most bytes mapped at once.
    pub peak_bytes: u64,
}

impl Mappings {
    /// A new anonymous mapping (or the new range of an mremap).
    pub fn map(&mut self, tid: u32, m: &Map) {
        if m.func == MapFn::Mremap && !self.last_unmap_hit.get(&tid).copied().unwrap_or(false) {
            // The old range was not one we tracked (a file mapping, or mapped before tracing).
            return;
        }
        if m.len == 0 {
            return;
        }
        self.remove(m.addr, m.len);
        // A mapping no one may touch only reserves addresses (Go's and the JVM's heaps, glibc's
        // thread arenas reserve far more than they use): no memory until parts of it are mapped
        // again with access, which are mappings of their own. Over a range already mapped it
        // gives that memory back, as the removal above says.
        if m.prot == libc::PROT_NONE as u32 && m.func != MapFn::Mremap {
            return;
        }
        self.ranges.insert(
            m.addr,
            Range {
                end: m.addr + m.len,
                stack: m.stack,
            },
        );
        let site = self.sites.entry(m.stack).or_default();
        site.allocations += 1;
        site.allocated_bytes += m.len;
        site.live_count += 1;
        site.live_bytes += m.len;
        self.maps += 1;
        self.live_bytes += m.len;
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
    }

    /// An unmapped range.
    pub fn unmap(&mut self, tid: u32, u: &Unmap) {
        let hit = self.remove(u.addr, u.len);
        self.last_unmap_hit.insert(tid, hit);
    }

    /// Removes [addr, addr+len) from every range; true if any tracked byte was removed.
    fn remove(&mut self, addr: u64, len: u64) -> bool {
        let end = addr.saturating_add(len);
        let overlapping: Vec<(u64, Range)> = self
            .ranges
            .range(..end)
            .rev()
            .take_while(|(_, r)| r.end > addr)
            .map(|(&s, &r)| (s, r))
            .collect();
        let hit = !overlapping.is_empty();
        for (start, r) in overlapping {
            self.ranges.remove(&start);
            let old_len = r.end - start;
            let site = self.sites.entry(r.stack).or_default();
            site.live_count -= 1;
            site.live_bytes -= old_len;
            self.live_bytes -= old_len;
            for (s, e) in [(start, addr), (end, r.end)] {
                if s < e && s >= start && e <= r.end {
                    self.ranges.insert(
                        s,
                        Range {
                            end: e,
                            stack: r.stack,
                        },
                    );
                    site_add(&mut self.sites, r.stack, e - s);
                    self.live_bytes += e - s;
                }
            }
        }
        hit
    }

    /// Per-site statistics.
    pub fn sites(&self) -> &HashMap<u32, SiteStats> {
        &self.sites
    }
}

fn site_add(sites: &mut HashMap<u32, SiteStats>, stack: u32, len: u64) {
    let site = sites.entry(stack).or_default();
    site.live_count += 1;
    site.live_bytes += len;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(m: &mut Mappings, func: MapFn, addr: u64, len: u64, stack: u32) {
        m.map(
            1,
            &Map {
                func,
                addr,
                len,
                prot: 3,
                flags: 0x22,
                stack,
            },
        );
    }

    #[test]
    fn a_reservation_is_no_memory_until_mapped_with_access_and_gives_back_what_it_covers() {
        let mut m = Mappings::default();
        let reserve = |m: &mut Mappings, addr, len| {
            m.map(
                1,
                &Map {
                    func: MapFn::Mmap,
                    addr,
                    len,
                    prot: libc::PROT_NONE as u32,
                    flags: 0x22,
                    stack: 7,
                },
            )
        };
        reserve(&mut m, 0x10_0000, 64 << 20);
        assert_eq!((m.live_bytes, m.maps), (0, 0));
        // Parts of the reservation committed with MAP_FIXED.
        map(&mut m, MapFn::Mmap, 0x10_0000, 4 << 20, 8);
        map(&mut m, MapFn::Mmap, 0x10_0000 + (8 << 20), 1 << 20, 8);
        assert_eq!(m.live_bytes, 5 << 20);
        // Decommitted by mapping PROT_NONE over it again.
        reserve(&mut m, 0x10_0000, 2 << 20);
        assert_eq!(m.live_bytes, 3 << 20);
        assert_eq!(m.sites()[&8].live_bytes, 3 << 20);
        assert!(!m.sites().contains_key(&7));
    }

    #[test]
    fn partial_unmap_splits_and_mremap_follows_tracked_ranges_only() {
        let mut m = Mappings::default();
        map(&mut m, MapFn::Mmap, 0x1000, 0x3000, 1);
        m.unmap(
            1,
            &Unmap {
                addr: 0x2000,
                len: 0x1000,
            },
        );
        assert_eq!(m.live_bytes, 0x2000);
        assert_eq!(m.sites()[&1].live_count, 2);
        // mremap of an untracked (file) range is ignored.
        m.unmap(
            1,
            &Unmap {
                addr: 0x9000,
                len: 0x1000,
            },
        );
        map(&mut m, MapFn::Mremap, 0xa000, 0x2000, 2);
        assert_eq!(m.live_bytes, 0x2000);
        // mremap of a tracked range moves it.
        m.unmap(
            1,
            &Unmap {
                addr: 0x1000,
                len: 0x1000,
            },
        );
        map(&mut m, MapFn::Mremap, 0xb000, 0x4000, 3);
        assert_eq!(m.live_bytes, 0x5000);
        assert_eq!(m.peak_bytes, 0x5000);
        assert_eq!(m.sites()[&1].live_bytes, 0x1000);
        assert_eq!(m.sites()[&3].live_bytes, 0x4000);
    }
}
