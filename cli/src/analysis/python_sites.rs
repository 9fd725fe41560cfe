//! Call sites grouped by Python location: in a Python process many native stacks (allocator paths,
//! threads, the interpreter's own calls) lead to one line of the script, and that line is the site a
//! user acts on. Stacks with the same Python frames form one site, represented by the smallest stack
//! id among them, so its native frames stay one level down. Stacks without Python frames keep their
//! own sites.
use std::borrow::Cow;

use memshim_trace::{FrameRef, StackTree};
use rustc_hash::FxHashMap as HashMap;

use super::{IdTable, SiteTable};

/// The Python frames of a stack (innermost first), the key its site is grouped by (empty for a
/// native-only stack).
pub fn python_key(frames: impl Iterator<Item = u64>) -> Vec<u64> {
    frames.filter(|&f| is_python(f)).collect()
}

fn is_python(frame: u64) -> bool {
    matches!(FrameRef::decode(frame), FrameRef::Python { .. })
}

/// Each stack id with Python frames, mapped to a number for its Python frames (its location):
/// stacks with the same Python frames get the same number. Worked out once per trace, since a
/// PyTorch job's thousands of stacks are 150 frames deep and every grouping below needs the keys
/// (they were rebuilt for each kind of memory, 17% of such a report's time).
///
/// A node's location is its parent's, extended by its own frame when that is a Python frame: each
/// node of the stack tree is worked out once (`StackTree::scan`), so a PyTorch job's million stacks
/// of 75 frames cost the 7 million nodes of their tree, not 87 million frames. Number 0 is no
/// Python frame at all.
pub fn location_keys(stacks: &StackTree) -> IdTable<u32> {
    let mut numbers: HashMap<(u32, u64), u32> = HashMap::default();
    let locations = stacks.scan(0u32, |location, frame| {
        if !is_python(frame) {
            return location;
        }
        let next = numbers.len() as u32 + 1;
        *numbers.entry((location, frame)).or_insert(next)
    });
    stacks
        .ids()
        .filter_map(|id| {
            let location = locations[stacks.node(id)? as usize];
            (location != 0).then_some((id, location))
        })
        .collect()
}

/// Maps each stack id whose Python frames another, smaller stack id shares to that id; `keys`
/// from [`location_keys`].
pub fn groups(keys: &IdTable<u32>) -> IdTable<u32> {
    let mut ids: Vec<(u32, u32)> = keys.iter().map(|(id, &k)| (id, k)).collect();
    ids.sort_unstable();
    // By location number: numbered from 1, dense.
    let mut first: IdTable<Option<u32>> = IdTable::default();
    let mut out = IdTable::default();
    for (id, key) in ids {
        let canon = *first.get_or_default(key).get_or_insert(id);
        if canon != id {
            out.insert(id, canon);
        }
    }
    out
}

/// As [`groups`], for the stacks of `sites` alone, each Python location represented by the stack
/// that allocated the most bytes there: its native frames are the ones a reader should see (a
/// device site shows a device allocation's stack, not a host one that reached the same line first).
pub fn groups_by_weight(keys: &IdTable<u32>, sites: &SiteTable) -> IdTable<u32> {
    let mut ids: Vec<(u32, u32, u64)> = sites
        .iter()
        .filter_map(|(id, s)| Some((id, *keys.get(&id)?, s.allocated_bytes)))
        .collect();
    ids.sort_unstable();
    // The heaviest stack of each location (by location number, dense), the first on ties.
    let mut best: IdTable<Option<(u64, u32)>> = IdTable::default();
    for &(id, key, weight) in &ids {
        let e = best.get_or_default(key).get_or_insert((weight, id));
        if weight > e.0 {
            *e = (weight, id);
        }
    }
    ids.into_iter()
        .filter_map(|(id, key, _)| {
            let canon = best[&key]?.1;
            (canon != id).then_some((id, canon))
        })
        .collect()
}

/// The site a stack id belongs to.
pub fn site_of(groups: &IdTable<u32>, stack: u32) -> u32 {
    groups.get(&stack).copied().unwrap_or(stack)
}

/// `sites` with the stacks of each Python location added together (`sites` itself when no two
/// stacks share their Python frames, as in every process without Python).
pub fn regroup<'a>(sites: &'a SiteTable, groups: &IdTable<u32>) -> Cow<'a, SiteTable> {
    if groups.is_empty() {
        return Cow::Borrowed(sites);
    }
    let mut out = SiteTable::default();
    for (id, s) in sites.iter() {
        out.get_or_default(site_of(groups, id)).absorb(s);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::SiteStats;

    #[test]
    fn stacks_with_the_same_python_frames_share_the_smallest_id() {
        let py = |c, l| FrameRef::python(c, l);
        let mut stacks = StackTree::default();
        for (id, frames) in [
            (5, vec![0x10, py(1, 8), 0x20, py(2, 17)]),
            (3, vec![0x11, 0x12, py(1, 8), 0x21, py(2, 17)]),
            (4, vec![0x10, py(1, 9), py(2, 17)]),
            (6, vec![0x10, 0x20]),
            (7, vec![0x10, 0x20]),
        ] {
            stacks.define(&memshim_trace::StackDef { id, frames });
        }
        let keys = location_keys(&stacks);
        let g = groups(&keys);
        assert_eq!(site_of(&g, 5), 3);
        assert_eq!(site_of(&g, 3), 3);
        assert_eq!(site_of(&g, 4), 4);
        assert_eq!(site_of(&g, 7), 7, "native-only stacks are never merged");
        let site = |n| SiteStats {
            allocations: n,
            live_count: n,
            live_bytes: 100 * n,
            ..Default::default()
        };
        let sites: SiteTable = [(3, site(1)), (5, site(2)), (4, site(4))]
            .into_iter()
            .collect();
        let r = regroup(&sites, &g);
        assert!(matches!(
            regroup(&sites, &IdTable::default()),
            Cow::Borrowed(_)
        ));
        assert_eq!(r.len(), 2);
        assert_eq!(r[&3].live_bytes, 300);
        assert_eq!(r[&3].allocations, 3);
        assert_eq!(r[&4].live_bytes, 400);
        // Among these sites alone, the heaviest stack of a location represents it.
        let heavy = |b| SiteStats {
            allocated_bytes: b,
            ..Default::default()
        };
        let sites: SiteTable = [(3, heavy(10)), (5, heavy(99)), (6, heavy(1))]
            .into_iter()
            .collect();
        let g = groups_by_weight(&keys, &sites);
        assert_eq!(site_of(&g, 3), 5);
        assert_eq!(site_of(&g, 5), 5);
        assert_eq!(
            g.len(),
            1,
            "stack 4 is not among the sites; 6 has no Python frames"
        );
    }
}
