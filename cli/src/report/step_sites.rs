//! Tensor sites that rose step after step: the seeds' "watch allocated memory every step", judged by
//! steps rather than by time. A site whose live tensor memory reached a new high in most of the
//! training steps and still holds nearly all of it at the end grows a step, however unevenly the
//! steps are spread in time (a loop of twelve 1 ms steps between a slow first step and a slow exit
//! spans too little of its site's life to look like growth over time).

use crate::analysis::python_sites::regroup;
use crate::analysis::{merge_sites, IdTable};
use crate::replay::Replayed;

/// Sites under this at their last high never count.
const MIN_BYTES: u64 = 1 << 20;

/// One site that rose step after step.
pub struct Rising {
    /// The stack that represents the site (its Python location's largest).
    pub stack: u32,
    /// The 1-based steps of its first and last new high.
    pub since_step: u32,
    pub until_step: u32,
    /// Live bytes at its first high, and held at the end.
    pub from_bytes: u64,
    pub held_bytes: u64,
}

/// The sites of `t`'s tensor memory, grouped as `groups` says (the PyTorch section's groups), that
/// rose in at least `min_steps` of the steps beginning at `starts` (ns, in order), most bytes a step
/// first.
pub fn rising(
    t: &Replayed,
    groups: &IdTable<u32>,
    starts: &[u64],
    min_steps: usize,
) -> Vec<Rising> {
    let all = merge_sites(t.torch.devices.values().map(|d| d.blocks.sites()));
    let sites = regroup(&all, groups);
    // A Python program's end is when its interpreter began to exit, before teardown freed it all.
    let at_exit = t
        .torch
        .at_exit
        .as_ref()
        .map(|a| regroup(&a.holders, groups));
    let step_of = |ns: u64| starts.partition_point(|&s| s <= ns) as u32;
    let mut out: Vec<Rising> = sites
        .iter()
        .filter_map(|(stack, s)| {
            let pts = &s.high_water.points;
            let (first, last) = (*pts.first()?, *pts.last()?);
            let held = match &at_exit {
                Some(h) => h.get(&stack).map_or(0, |x| x.live_bytes),
                None => s.live_bytes,
            };
            if last.1 < MIN_BYTES || held * 10 < last.1 * 9 {
                return None;
            }
            let mut steps: Vec<u32> = pts
                .iter()
                .map(|p| step_of(p.0))
                .filter(|&i| i > 0)
                .collect();
            steps.dedup();
            let (since, until) = (*steps.first()?, *steps.last()?);
            (steps.len() >= min_steps && until > since && held > first.1).then_some(Rising {
                stack,
                since_step: since,
                until_step: until,
                from_bytes: first.1,
                held_bytes: held,
            })
        })
        .collect();
    out.sort_by_key(|r| {
        (
            std::cmp::Reverse(
                (r.held_bytes - r.from_bytes) / u64::from(r.until_step - r.since_step),
            ),
            r.stack,
        )
    });
    out
}
