use super::*;
use crate::StackTree;

/// A deterministic generator (xorshift), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Stacks as a program makes them: a few outer paths shared by many, varied inner frames, the
/// same stack again now and then, Python frames among the native ones.
fn program_stacks(seed: u64, count: usize) -> Vec<Vec<u64>> {
    let mut rng = Rng(seed);
    let trunks: Vec<Vec<u64>> = (0..8)
        .map(|t| {
            (0..20 + t * 3)
                .map(|i| 0x40_0000 + (t * 100 + i) as u64 * 16)
                .collect()
        })
        .collect();
    let mut out: Vec<Vec<u64>> = Vec::new();
    for _ in 0..count {
        if !out.is_empty() && rng.below(5) == 0 {
            let again = out[rng.below(out.len() as u64) as usize].clone();
            out.push(again);
            continue;
        }
        let trunk = &trunks[rng.below(trunks.len() as u64) as usize];
        let keep = rng.below(trunk.len() as u64 + 1) as usize;
        // Outermost first while building, innermost first once reversed.
        let mut s: Vec<u64> = trunk[..keep].to_vec();
        for _ in 0..rng.below(12) {
            s.push(if rng.below(6) == 0 {
                crate::FrameRef::python(rng.below(50) as u32, rng.below(400) as u32)
            } else {
                0x7f00_0000_0000 + rng.below(300) * 8
            });
        }
        s.reverse();
        out.push(s);
    }
    out
}

fn round_trip(stacks: &[Vec<u64>], max_sets: usize) -> (StackTree, usize) {
    let mut b = StackBrancher::with_max_sets(max_sets);
    let mut tree = StackTree::default();
    let mut written = 0;
    for (id, s) in stacks.iter().enumerate() {
        let branch = b.branch(id as u32, s).expect("node numbers left");
        written += branch.frames.len();
        assert!(
            branch.parent < branch.first,
            "a branch hangs below an earlier node"
        );
        tree.branch(&branch);
    }
    (tree, written)
}

#[test]
fn every_stack_reads_back_whole_whatever_the_cache_holds() {
    for (seed, max_sets) in [(1, MAX_SETS), (2, 1), (3, 4), (4, 64)] {
        let stacks = program_stacks(seed, 3000);
        let (tree, written) = round_trip(&stacks, max_sets);
        for (id, s) in stacks.iter().enumerate() {
            assert_eq!(
                &tree.to_vec(id as u32),
                s,
                "stack {id} (seed {seed}, {max_sets} sets)"
            );
        }
        let total: usize = stacks.iter().map(Vec::len).sum();
        assert!(written < total, "{written} frames written of {total}");
        assert_eq!(tree.len(), stacks.len());
    }
}

#[test]
fn shared_callers_are_written_once() {
    let stacks = program_stacks(7, 5000);
    let (_, written) = round_trip(&stacks, MAX_SETS);
    let mut distinct = std::collections::HashSet::new();
    for s in &stacks {
        for depth in 1..=s.len() {
            distinct.insert(s[s.len() - depth..].to_vec());
        }
    }
    // A node per distinct path from the root, but for the few a full set of the cache pushed out
    // before it grew.
    assert!(written >= distinct.len());
    assert!(
        written <= distinct.len() + distinct.len() / 8,
        "{written} nodes for {} paths",
        distinct.len()
    );
}

#[test]
fn the_same_stack_again_adds_no_node_and_an_empty_stack_is_the_root() {
    let mut b = StackBrancher::default();
    let first = b.branch(0, &[3, 2, 1]).unwrap();
    assert_eq!(
        (first.parent, first.first, first.frames),
        (0, 1, vec![1, 2, 3])
    );
    let again = b.branch(1, &[3, 2, 1]).unwrap();
    assert_eq!((again.parent, again.frames.len()), (3, 0));
    let caller = b.branch(2, &[2, 1]).unwrap();
    assert_eq!((caller.parent, caller.frames.len()), (2, 0));
    let empty = b.branch(3, &[]).unwrap();
    assert_eq!((empty.parent, empty.frames.len()), (0, 0));
    let other = b.branch(4, &[9, 2, 1]).unwrap();
    assert_eq!((other.parent, other.first, other.frames), (2, 4, vec![9]));
}

#[test]
fn a_lost_branch_costs_the_stacks_below_it_only_their_callers() {
    let stacks = program_stacks(11, 2000);
    let mut b = StackBrancher::default();
    let branches: Vec<StackBranch> = stacks
        .iter()
        .enumerate()
        .map(|(id, s)| b.branch(id as u32, s).unwrap())
        .collect();
    let mut tree = StackTree::default();
    let lost = |i: usize| i % 97 == 5;
    for (i, br) in branches.iter().enumerate() {
        if !lost(i) {
            tree.branch(br);
        }
    }
    for (i, s) in stacks.iter().enumerate() {
        let Some(frames) = tree.frames(i as u32) else {
            assert!(
                lost(i) || branches[i].frames.is_empty(),
                "stack {i} missing"
            );
            continue;
        };
        let frames: Vec<u64> = frames.collect();
        // What it has is its innermost frames, in order.
        assert_eq!(&s[..frames.len()], &frames[..], "stack {i}");
        assert!(frames.len() >= branches[i].frames.len());
    }
}
