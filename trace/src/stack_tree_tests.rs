use super::*;

fn branch(id: u32, parent: u32, first: u32, frames: &[u64]) -> StackBranch {
    StackBranch {
        id,
        parent,
        first,
        frames: frames.to_vec(),
    }
}

#[test]
fn definitions_whole_share_the_callers_of_the_one_before() {
    let mut t = StackTree::default();
    t.define(&StackDef {
        id: 0,
        frames: vec![10, 20, 30],
    });
    t.define(&StackDef {
        id: 1,
        frames: vec![11, 20, 30],
    });
    t.define(&StackDef {
        id: 5,
        frames: vec![],
    });
    t.define(&StackDef {
        id: 2,
        frames: vec![20, 30],
    });
    assert_eq!(t.to_vec(0), [10, 20, 30]);
    assert_eq!(t.to_vec(1), [11, 20, 30]);
    assert_eq!(t.to_vec(2), [20, 30]);
    assert_eq!(t.frames(5).map(Iterator::count), Some(0));
    assert!(t.frames(3).is_none());
    // The root, 30, 20, 10, 11: the second stack and the fourth added one node between them.
    assert_eq!(t.node_count(), 5);
    assert_eq!(t.ids().collect::<Vec<_>>(), [0, 1, 2, 5]);
    let mut frames: Vec<u64> = t.node_frames().collect();
    frames.sort_unstable();
    assert_eq!(frames, [10, 11, 20, 30]);
}

#[test]
fn a_branch_reads_through_its_parents() {
    let mut t = StackTree::default();
    t.branch(&branch(0, 0, 1, &[30, 20, 10]));
    t.branch(&branch(1, 2, 4, &[11]));
    t.branch(&branch(2, 2, 5, &[]));
    assert_eq!(t.to_vec(0), [10, 20, 30]);
    assert_eq!(t.to_vec(1), [11, 20, 30]);
    assert_eq!(t.to_vec(2), [20, 30]);
    assert_eq!(t.len(), 3);
}

#[test]
fn records_that_do_not_fit_the_tree_are_left_out() {
    let mut t = StackTree::default();
    t.branch(&branch(0, 0, 1, &[30, 20]));
    // Redefines nodes 1 and 2.
    t.branch(&branch(1, 0, 1, &[7]));
    // Hangs below a node that does not exist yet: kept, without callers.
    t.branch(&branch(2, 9, 3, &[5]));
    // Numbers beyond what a reader may skip, or past the last node number.
    t.branch(&branch(3, 0, u32::MAX - 1, &[1]));
    t.branch(&branch(4, 0, 1 << 30, &[1]));
    // No frames, below a node that is not there.
    t.branch(&branch(6, 77, 0, &[]));
    assert!(t.frames(1).is_none());
    assert_eq!(t.to_vec(2), [5]);
    assert!(t.frames(3).is_none());
    assert!(t.frames(4).is_none());
    assert!(t.frames(6).is_none());
    assert_eq!(t.to_vec(0), [20, 30]);
}

#[test]
fn nodes_of_a_lost_record_are_placeholders_no_stack_reaches() {
    let mut t = StackTree::default();
    t.branch(&branch(0, 0, 1, &[30, 20]));
    // Nodes 3 and 4 were in a lost frame; 5 hangs below 4, 6 below 2.
    t.branch(&branch(2, 4, 5, &[9]));
    t.branch(&branch(3, 2, 6, &[8]));
    t.branch(&branch(4, 3, 7, &[]));
    assert_eq!(t.to_vec(2), [9]);
    assert_eq!(t.to_vec(3), [8, 20, 30]);
    assert!(
        t.frames(4).is_none(),
        "a stack that is a placeholder is not defined"
    );
    let mut frames: Vec<u64> = t.node_frames().collect();
    frames.sort_unstable();
    assert_eq!(frames, [8, 9, 20, 30]);
}

#[test]
fn ids_far_apart_are_kept_and_listed_in_order() {
    let mut t = StackTree::default();
    t.branch(&branch(3_000_000_000, 0, 1, &[1]));
    t.branch(&branch(2, 0, 2, &[2]));
    t.branch(&branch(70_000, 0, 3, &[3]));
    t.branch(&branch(90_000, 0, 4, &[4]));
    assert_eq!(
        t.ids().collect::<Vec<_>>(),
        [2, 70_000, 90_000, 3_000_000_000]
    );
    assert_eq!(t.to_vec(3_000_000_000), [1]);
    assert_eq!(t.to_vec(90_000), [4]);
    // Defined again: the last definition holds, and it is still one stack.
    t.branch(&branch(2, 0, 5, &[5]));
    assert_eq!(t.to_vec(2), [5]);
    assert_eq!(t.len(), 4);
}

#[test]
fn a_chain_deeper_than_any_stack_hands_out_at_most_max_frames() {
    let mut t = StackTree::default();
    for i in 0..(MAX_FRAMES as u32 + 10) {
        t.branch(&branch(i, i, i + 1, &[u64::from(i) + 1]));
    }
    assert_eq!(t.frames(MAX_FRAMES as u32 + 9).unwrap().count(), MAX_FRAMES);
}

#[test]
fn a_scan_reads_each_parents_value_and_starts_afresh_below_a_lost_node() {
    let mut t = StackTree::default();
    t.branch(&branch(0, 0, 1, &[30, 20]));
    t.branch(&branch(1, 2, 3, &[10]));
    // Node 4 was in a lost frame; 5 hangs below it.
    t.branch(&branch(2, 4, 5, &[9]));
    let sums = t.scan(0u64, |above, frame| above + frame);
    assert_eq!(sums.len(), t.node_count());
    let at = |id| sums[t.node(id).unwrap() as usize];
    assert_eq!(at(0), 50);
    assert_eq!(at(1), 60);
    assert_eq!(at(2), 9, "below a placeholder, only the stack's own frames");
    assert_eq!(sums[0], 0);
}
