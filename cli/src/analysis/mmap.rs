//! Anonymous mappings: ranges still mapped at the end, by the site that mapped them. munmap may cut a
//! range anywhere, so ranges are kept as an interval map and split as needed. A mapping without
//! access (`PROT_NONE`) is an address reservation, not memory. Each site keeps its high-water history
//! and when it gave most of it back, as the heap's sites do: allocator arenas (pymalloc's, a Python
//! program's small objects) grow through mappings.
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use memshim_trace::{Map, MapFn, Unmap};

use super::SiteTable;

#[derive(Clone, Copy, Debug)]
struct Range {
    end: u64,
    stack: u32,
}

/// The mapping analysis state.
#[derive(Default, Debug)]
pub struct Mappings {
    ranges: BTreeMap<u64, Range>,
    sites: SiteTable,
    /// A Python location's site: the first stack seen with those Python frames. Mappings count
    /// by Python location as they are made, not afterwards: an allocator reaches `mmap` through
    /// several native paths from one line, and the sum of their live bytes at each moment is only
    /// known while replaying (high-water curves merged afterwards give a lower bound).
    python_sites: HashMap<Vec<u64>, u32>,
    last_unmap_hit: HashMap<u32, bool>,
    /// Mappings created.
    pub maps: u64,
    /// Bytes mapped now.
    pub live_bytes: u64,
    /// The most bytes mapped at once.
    pub peak_bytes: u64,
    /// The last map or unmap (clock ns).
    pub last_t: u64,
}

impl Mappings {
    /// A new anonymous mapping (or the new range of an mremap).
    pub fn map(&mut self, t: u64, tid: u32, m: &Map, frames: Option<impl Iterator<Item = u64>>) {
        if m.func == MapFn::Mremap && !self.last_unmap_hit.get(&tid).copied().unwrap_or(false) {
            // The old range was not one we tracked (a file mapping, or mapped before tracing).
            return;
        }
        if m.len == 0 {
            return;
        }
        self.last_t = self.last_t.max(t);
        self.remove(t, m.addr, m.len);
        // A mapping no one may touch only reserves addresses (Go's and the JVM's heaps, glibc's
        // thread arenas reserve far more than they use): no memory until parts of it are mapped
        // again with access, which are mappings of their own. Over a range already mapped it
        // gives that memory back, as the removal above says.
        if m.prot == libc::PROT_NONE as u32 && m.func != MapFn::Mremap {
            return;
        }
        let key = frames
            .map(super::python_sites::python_key)
            .unwrap_or_default();
        let stack = if key.is_empty() {
            m.stack
        } else {
            *self.python_sites.entry(key).or_insert(m.stack)
        };
        self.ranges.insert(
            m.addr,
            Range {
                end: m.addr + m.len,
                stack,
            },
        );
        let site = self.sites.get_or_default(stack);
        site.allocations += 1;
        site.allocated_bytes += m.len;
        site.live_count += 1;
        site.live_bytes += m.len;
        if site.live_bytes > site.high_water.high() {
            site.released_t = None;
        }
        site.high_water.observe(t, site.live_bytes);
        self.maps += 1;
        self.live_bytes += m.len;
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
    }

    /// An unmapped range.
    pub fn unmap(&mut self, t: u64, tid: u32, u: &Unmap) {
        self.last_t = self.last_t.max(t);
        let hit = self.remove(t, u.addr, u.len);
        self.last_unmap_hit.insert(tid, hit);
    }

    /// Removes [addr, addr+len) from every range; true if any tracked byte was removed.
    fn remove(&mut self, t: u64, addr: u64, len: u64) -> bool {
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
            let site = self.sites.get_or_default(r.stack);
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
            let site = self.sites.get_or_default(r.stack);
            if site.released_t.is_none() && site.live_bytes * 2 < site.high_water.high() {
                site.released_t = Some(t);
            }
        }
        hit
    }

    /// Per-site statistics.
    pub fn sites(&self) -> &SiteTable {
        &self.sites
    }
}

fn site_add(sites: &mut SiteTable, stack: u32, len: u64) {
    let site = sites.get_or_default(stack);
    site.live_count += 1;
    site.live_bytes += len;
}

#[cfg(test)]
mod tests {
    use super::*;
    use memshim_trace::FrameRef;

    fn map(m: &mut Mappings, func: MapFn, addr: u64, len: u64, stack: u32) {
        m.map(
            0,
            1,
            &Map {
                func,
                addr,
                len,
                prot: 3,
                flags: 0x22,
                stack,
            },
            None::<std::iter::Empty<u64>>,
        );
    }

    #[test]
    fn a_reservation_is_no_memory_until_mapped_with_access_and_gives_back_what_it_covers() {
        let mut m = Mappings::default();
        let reserve = |m: &mut Mappings, addr, len| {
            m.map(
                0,
                1,
                &Map {
                    func: MapFn::Mmap,
                    addr,
                    len,
                    prot: libc::PROT_NONE as u32,
                    flags: 0x22,
                    stack: 7,
                },
                None::<std::iter::Empty<u64>>,
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
            0,
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
            0,
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
            0,
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

    #[test]
    fn arenas_mapped_one_by_one_climb_and_their_release_is_timed() {
        // pymalloc's way: a 1 MiB arena at a time from one line of Python, through two native
        // paths (stacks 4 and 5), then all given back: one site whose curve is their sum.
        let mut m = Mappings::default();
        for i in 0..8u64 {
            m.map(
                (i + 1) * 1000,
                1,
                &Map {
                    func: MapFn::Mmap,
                    addr: 0x100_0000 + (i << 20),
                    len: 1 << 20,
                    prot: 3,
                    flags: 0x22,
                    stack: if i % 2 == 0 { 4 } else { 5 },
                },
                Some([0x10 + (i % 2), FrameRef::python(1, 8)].into_iter()),
            );
        }
        assert!(!m.sites().contains_key(&5), "one site for the line");
        let s = &m.sites()[&4];
        assert_eq!(s.high_water.points.len(), 8);
        assert_eq!(s.high_water.high(), 8 << 20);
        assert_eq!(s.released_t, None);
        // Half of it unmapped is not yet given back; one more arena is.
        for (i, t) in [(0u64, 9000u64), (1, 9100), (2, 9200), (3, 9300), (4, 9400)] {
            m.unmap(
                t,
                1,
                &Unmap {
                    addr: 0x100_0000 + (i << 20),
                    len: 1 << 20,
                },
            );
        }
        assert_eq!(m.sites()[&4].released_t, Some(9400));
        assert_eq!(m.last_t, 9400);
    }
}
