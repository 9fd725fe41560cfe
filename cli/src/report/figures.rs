//! The figures and labels the renderers print that follow from the rest of the model: what of a
//! leak class is the program's own and what is set apart, the sites' labels on the first screen,
//! the program's frame of a call, sums over a section. Made here, once, so that every format prints
//! the same numbers and no renderer computes one.
//!
//! Made again after everything that changes what they follow from: the build of a process, the
//! suppressions, the filters (`--min-bytes` shortens the lists of sites, never the totals) and the
//! redaction.
use std::collections::BTreeMap;

use super::by_design::{describe, is_by_design};
use super::model::frame::{is_allocator, place};
use super::model::{ByDesignOwner, LeakClass, Process, Report, SuppressedRule};
use super::owner::first_program_function;
use super::site_label::{finding_place, label};

/// The figures of every process of `report`.
pub fn fill(report: &mut Report) {
    report.processes.iter_mut().for_each(process);
}

/// The figures of one process.
pub fn process(p: &mut Process) {
    let l = &mut p.leaks;
    for c in [
        &mut l.host,
        &mut l.mmap,
        &mut l.device,
        &mut l.managed,
        &mut l.pinned,
        &mut l.registered,
        &mut p.torch.held_at_end,
    ] {
        leak_class(c);
    }
    for s in &mut p.heap.peak_sites {
        s.label = Some(label(&s.frames).unwrap_or_else(|| "an unnamed site".into()));
    }
    let program_function = |frames| first_program_function(frames).map(str::to_string);
    for f in &mut p.device.failures {
        f.site = program_function(&f.frames);
    }
    let numa = &mut p.numa;
    for c in &mut numa.calls {
        c.site = program_function(&c.frames);
    }
    for b in &mut numa.placements {
        b.site = program_function(&b.frames);
        b.sampled_pages = b.pages_by_node.iter().map(|n| n.1).sum::<u32>() + b.absent_pages;
    }
    numa.remote_blocks = numa.placements.iter().filter(|b| b.remote).count() as u64;
    numa.migrated_threads = numa.threads.iter().filter(|t| t.migrated).count() as u64;
    let c = &mut p.counters;
    c.samples = c.series.iter().map(|s| s.points.len() as u64).max();
    let tr = &mut p.transfers;
    tr.copies = tr.summary.iter().map(|r| r.count).sum();
    tr.bytes = tr.summary.iter().map(|r| r.bytes).sum();
    let steps = &mut p.torch.steps;
    steps.marker_place = finding_place(&steps.marker);
    for g in &mut steps.growth {
        g.place = finding_place(&g.frames);
    }
    // The first step to reach the highest allocated peak.
    steps.peak_step = steps
        .steps
        .iter()
        .max_by(|a, b| {
            (a.peak_allocated_bytes.cmp(&b.peak_allocated_bytes)).then(b.index.cmp(&a.index))
        })
        .map(|s| s.index);
}

/// The figures of one leak class, from its totals and the sites it lists.
pub fn leak_class(c: &mut LeakClass) {
    c.program_bytes = c
        .bytes
        .saturating_sub(c.driver_bytes + c.by_design_bytes + c.suppressed_bytes);
    c.program_count = c
        .count
        .saturating_sub(c.driver_count + c.by_design_count + c.suppressed_count);
    c.non_driver_bytes = c.bytes.saturating_sub(c.driver_bytes);
    c.non_driver_count = c.count.saturating_sub(c.driver_count);
    c.program_sites = c.sites_of_program().count() as u64;
    c.driver_sites = c.sites.iter().filter(|s| s.owner == "cuda_driver").count() as u64;
    c.by_design_owners = by_design_owners(c);
    c.suppressed_rules = suppressed_rules(c);
}

/// The sites kept by design, by owner, largest first.
fn by_design_owners(c: &LeakClass) -> Vec<ByDesignOwner> {
    let mut owners: BTreeMap<&'static str, ByDesignOwner> = BTreeMap::new();
    for s in c.sites.iter().filter(|s| is_by_design(s.owner)) {
        let e = owners.entry(s.owner).or_insert_with(|| ByDesignOwner {
            owner: s.owner,
            described: describe(s.owner),
            bytes: 0,
            count: 0,
            sites: 0,
            // The sites are largest first: the first one names the owner's main site. Its
            // innermost frame past the allocator; when that has no name, the innermost named
            // frame of the same library, else its place.
            largest_in: {
                let mut inner = s.frames.iter().filter(|f| !is_allocator(f));
                let first = inner.next();
                first
                    .filter(|f| f.function.is_none())
                    .and_then(|f| inner.find(|g| g.module == f.module && g.function.is_some()))
                    .or(first)
                    .map(|f| match f.function.as_deref() {
                        Some(func) => func.strip_prefix("__GI_").unwrap_or(func).to_string(),
                        None => place(f),
                    })
            },
        });
        e.bytes += s.bytes;
        e.count += s.count;
        e.sites += 1;
    }
    let mut v: Vec<ByDesignOwner> = owners.into_values().collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.owner.cmp(b.owner)));
    v
}

/// The sites each suppression rule matched, in the order of the first site each matched.
fn suppressed_rules(c: &LeakClass) -> Vec<SuppressedRule> {
    let mut rules: Vec<SuppressedRule> = Vec::new();
    for s in &c.sites {
        let Some(rule) = s.suppressed_by.as_deref() else {
            continue;
        };
        match rules.iter_mut().find(|r| r.rule == rule) {
            Some(r) => {
                r.bytes += s.bytes;
                r.count += s.count;
                r.sites += 1;
            }
            None => rules.push(SuppressedRule {
                rule: rule.to_string(),
                bytes: s.bytes,
                count: s.count,
                sites: 1,
            }),
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use crate::report::model::{LeakClass, Site};

    fn site(owner: &'static str, bytes: u64, count: u64) -> Site {
        let mut s = crate::render::fixture::site(bytes, count, Vec::new());
        s.owner = owner;
        s
    }

    #[test]
    fn a_leak_class_says_what_is_the_programs_and_what_is_set_apart() {
        let mut suppressed = site("program", 30, 3);
        suppressed.suppressed_by = Some("leak:cache (s.supp:1)".into());
        let mut c = LeakClass {
            bytes: 1000,
            count: 20,
            driver_bytes: 400,
            driver_count: 4,
            by_design_bytes: 70,
            by_design_count: 2,
            suppressed_bytes: 30,
            suppressed_count: 3,
            sites: vec![
                site("cuda_driver", 400, 4),
                site("program", 300, 5),
                site("c_library", 40, 1),
                site("nccl", 200, 5),
                suppressed,
                site("interpreter", 20, 1),
                site("c_library", 10, 1),
            ],
            ..LeakClass::default()
        };
        super::leak_class(&mut c);
        assert_eq!((c.program_bytes, c.program_count), (500, 11));
        assert_eq!((c.non_driver_bytes, c.non_driver_count), (600, 16));
        assert_eq!((c.program_sites, c.driver_sites), (2, 1));
        let owners: Vec<_> = c
            .by_design_owners
            .iter()
            .map(|o| (o.owner, o.described, o.bytes, o.count, o.sites))
            .collect();
        assert_eq!(
            owners,
            [
                ("c_library", "the C library", 50, 2, 2),
                (
                    "interpreter",
                    "the Python interpreter at start-up",
                    20,
                    1,
                    1
                )
            ]
        );
        let rules: Vec<_> = c
            .suppressed_rules
            .iter()
            .map(|r| (r.rule.as_str(), r.bytes, r.count, r.sites))
            .collect();
        assert_eq!(rules, [("leak:cache (s.supp:1)", 30, 3, 1)]);
    }

    #[test]
    fn the_first_step_to_reach_the_highest_peak_is_the_peak_step() {
        let mut p = crate::render::fixture_report().processes.remove(0);
        let step = |index, peak| crate::report::model::StepOut {
            index,
            start_time_s: 0.0,
            duration_s: 0.0,
            peak_allocated_bytes: peak,
            end_allocated_bytes: 0,
            peak_reserved_bytes: 0,
            peak_host_bytes: 0,
            htod_bytes: 0,
            dtoh_bytes: 0,
            roles_at_peak: Default::default(),
        };
        p.torch.steps.steps = vec![step(1, 10), step(2, 30), step(3, 30), step(4, 20)];
        super::process(&mut p);
        assert_eq!(p.torch.steps.peak_step, Some(2));
    }
}
