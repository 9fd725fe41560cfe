//! Why a large block sits on another node than the thread that allocated it. Either a placement call
//! put it there (an `mbind` of a range that overlaps it made after it was allocated, a page move after
//! it was allocated, or a `set_mempolicy` policy in force when it was allocated), or none did, and
//! then Linux's default policy placed each page on the node of the CPU that first wrote it: another
//! thread, running on the other node, touched it first (typically initialised it).
//! Never: blames first touch when a placement call could explain the placement.
use memshim_trace::{NumaCall, NumaFn};

use super::model::{Finding, NumaCallOut, PlacementOut};
use super::sites::program_site;
use crate::replay::SampledBlock;
use crate::units::human_bytes;

/// The remote block's cause: "placement_call" with the index of the call in `calls`, or
/// "first_touch".
pub fn cause(b: &SampledBlock, calls: &[(u64, u32, NumaCall)]) -> (&'static str, Option<usize>) {
    match placed_by(b, calls) {
        Some(i) => ("placement_call", Some(i)),
        None => ("first_touch", None),
    }
}

/// The placement call that explains where the block is, if one does.
fn placed_by(b: &SampledBlock, calls: &[(u64, u32, NumaCall)]) -> Option<usize> {
    let (lo, hi) = (b.placement.addr, b.placement.addr + b.placement.len);
    // A call before the allocation cannot have concerned this block's range (an address is reused
    // once its block is freed), except a policy that stays in force.
    let after = |at: u64| b.alloc_t.is_none_or(|a| at >= a);
    let bound = calls.iter().rposition(|(at, _, c)| {
        c.func == NumaFn::Mbind && c.result == 0 && after(*at) && c.addr < hi && c.addr + c.len > lo
    });
    let moved = || {
        calls.iter().rposition(|(at, _, c)| {
            matches!(c.func, NumaFn::MovePages | NumaFn::MigratePages)
                && c.result >= 0
                && after(*at)
        })
    };
    let policy = || {
        let alloc_t = b.alloc_t?;
        let i = calls.iter().rposition(|(at, _, c)| {
            c.func == NumaFn::SetMempolicy && c.result == 0 && *at <= alloc_t
        })?;
        // MPOL_DEFAULT and MPOL_LOCAL place pages where they are first touched, as no policy does.
        (!matches!(calls[i].2.mode & 0x3fff, 0 | 4)).then_some(i)
    };
    bound.or_else(moved).or_else(policy)
}

/// Findings for the remote blocks, by cause: the largest of each named.
pub fn findings(placements: &[PlacementOut], calls: &[NumaCallOut]) -> Vec<Finding> {
    let of = |cause: &str| -> Vec<&PlacementOut> {
        placements
            .iter()
            .filter(|p| p.remote && p.cause == Some(cause))
            .collect()
    };
    let mut out = Vec::new();
    // "64.0 MiB allocated in f (x.c:9)", its node, and "CPU 1 of node 1".
    let describe = |p: &PlacementOut| {
        let site = program_site(&p.frames)
            .map(|s| format!(" allocated in {s}"))
            .unwrap_or_default();
        let cpu = p
            .alloc_cpu
            .map(|c| format!("CPU {c} of "))
            .unwrap_or_default();
        (
            format!("{}{site}", human_bytes(p.bytes)),
            p.node.unwrap_or_default(),
            format!("{cpu}node {}", p.alloc_node.unwrap_or_default()),
        )
    };
    let touched = of("first_touch");
    if let Some(top) = touched.first() {
        let (what, node, by) = describe(top);
        out.push(Finding {
            kind: "first_touch",
            text: format!(
                "{} remote buffers ({} in all) were put on another node by no placement call: the likely cause is first touch by a thread running on the other node (Linux puts a page on the node of the CPU that first writes it). The largest, {what}, is on node {node} though it was allocated on {by}. Initialise it from the thread that uses it (or bind that thread to the buffer's node), or place it explicitly with numactl --membind or --interleave=all",
                touched.len(),
                human_bytes(touched.iter().map(|p| p.bytes).sum()),
            ),
         ..Default::default() });
    }
    let placed = of("placement_call");
    if let Some(top) = placed.first() {
        let call = top
            .placed_by_call
            .and_then(|i| calls.get(i))
            .map(|c| {
                let policy = c
                    .policy
                    .as_deref()
                    .map(|p| format!("{p}, "))
                    .unwrap_or_default();
                let site = program_site(&c.frames)
                    .map(|s| format!(" in {s}"))
                    .unwrap_or_default();
                format!("{}({policy}nodes {:?}){site}", c.call, c.nodes)
            })
            .unwrap_or_else(|| "a placement call".into());
        let (what, node, by) = describe(top);
        out.push(Finding {
            kind: "placed_remote",
            text: format!(
                "{} remote buffers ({} in all) were put where they are by the program's placement calls. The largest, {what}, was put on node {node} by {call}, though it was allocated on {by}: if that thread uses it, bind the thread to node {node} or place the buffer on the thread's node",
                placed.len(),
                human_bytes(placed.iter().map(|p| p.bytes).sum()),
            ),
         ..Default::default() });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::HostBlock;
    use memshim_trace::Placement;

    fn block(addr: u64, alloc_t: u64) -> SampledBlock {
        SampledBlock {
            placement: Placement {
                addr,
                len: 1 << 20,
                pages: 16,
                nodes: vec![(0, 16)],
                absent: 0,
            },
            alloc_cpu: Some(1),
            alloc_t: Some(alloc_t),
            stack: None,
            memory: HostBlock::Heap,
        }
    }

    fn call(func: NumaFn, mode: i32, addr: u64, len: u64) -> NumaCall {
        NumaCall {
            func,
            mode,
            nodes: vec![0],
            from_nodes: Vec::new(),
            cpus: Vec::new(),
            addr,
            len,
            target: 0,
            flags: 0,
            result: 0,
            stack: 0,
        }
    }

    #[test]
    fn an_mbind_over_the_block_after_its_allocation_explains_it() {
        let calls = vec![
            (5, 1, call(NumaFn::Mbind, 2, 0x10_0000, 4096)),
            (20, 1, call(NumaFn::Mbind, 2, 0x10_1000, 1 << 20)),
            (30, 1, call(NumaFn::Mbind, 2, 0x90_0000, 1 << 20)),
        ];
        assert_eq!(
            cause(&block(0x10_0000, 10), &calls),
            ("placement_call", Some(1))
        );
        assert_eq!(
            cause(&block(0x10_0000, 25), &calls),
            ("first_touch", None),
            "an mbind of an earlier block at the same address does not count"
        );
        assert_eq!(cause(&block(0x50_0000, 10), &calls), ("first_touch", None));
    }

    #[test]
    fn a_binding_policy_in_force_explains_it_a_default_one_does_not() {
        let mut calls = vec![(5, 1, call(NumaFn::SetMempolicy, 2, 0, 0))];
        assert_eq!(
            cause(&block(0x10_0000, 10), &calls),
            ("placement_call", Some(0))
        );
        assert_eq!(cause(&block(0x10_0000, 4), &calls), ("first_touch", None));
        calls.push((7, 1, call(NumaFn::SetMempolicy, 0, 0, 0)));
        assert_eq!(cause(&block(0x10_0000, 10), &calls), ("first_touch", None));
    }
}
