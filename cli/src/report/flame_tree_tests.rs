use super::*;

/// Merges stacks of named frames, as `flame::section` does with its paths, under the first
/// weighting; the others carry nothing.
fn tree(stacks: impl Iterator<Item = (Vec<(String, &'static str)>, u64, u64)>) -> FlameTree {
    let mut names: Vec<String> = Vec::new();
    let mut b = Builder::new();
    for (path, bytes, blocks) in stacks {
        let path: Vec<(u32, &'static str)> = path
            .into_iter()
            .map(|(n, k)| {
                let i = names.iter().position(|m| *m == n).unwrap_or_else(|| {
                    names.push(n);
                    names.len() - 1
                });
                (i as u32, k)
            })
            .collect();
        let at = b.path(&path);
        b.add(at, [(bytes, blocks), (0, 0), (0, 0)]);
    }
    b.finish(0, &names)
}

fn stack(names: &[&str], bytes: u64, blocks: u64) -> (Vec<(String, &'static str)>, u64, u64) {
    (
        names.iter().map(|n| (n.to_string(), "native")).collect(),
        bytes,
        blocks,
    )
}

/// (name, bytes, blocks, parent) of every node.
fn flat(t: &FlameTree) -> Vec<(&str, u64, u64, Option<u32>)> {
    t.nodes
        .iter()
        .map(|n| (n.name.as_str(), n.bytes, n.blocks, n.parent))
        .collect()
}

#[test]
fn stacks_through_one_function_merge_into_one_frame() {
    let t = tree(
        vec![
            stack(&["main", "load", "parse"], 300, 3),
            stack(&["main", "load"], 100, 1),
            stack(&["main", "save"], 600, 2),
        ]
        .into_iter(),
    );
    assert_eq!((t.bytes, t.blocks, t.cut_below_bytes), (1000, 6, 1));
    assert_eq!(
        flat(&t),
        [
            ("main", 1000, 6, None),
            ("save", 600, 2, Some(0)),
            ("load", 400, 4, Some(0)),
            ("parse", 300, 3, Some(2)),
        ]
    );
}

#[test]
fn frames_under_a_thousandth_are_merged_into_other() {
    let mut stacks = vec![stack(&["main", "big"], 1_000_000, 1)];
    for i in 0..50 {
        stacks.push(stack(&["main", &format!("tiny{i}"), "deeper"], 10, 1));
    }
    let t = tree(stacks.into_iter());
    assert_eq!(t.bytes, 1_000_500);
    assert_eq!(t.cut_below_bytes, 1001);
    // Each tiny function and the frame under it.
    assert_eq!(t.merged_frames, 100);
    assert_eq!(
        flat(&t),
        [
            ("main", 1_000_500, 51, None),
            ("big", 1_000_000, 1, Some(0)),
            ("other", 500, 50, Some(0)),
        ]
    );
    assert_eq!(t.nodes[2].kind, "other");
}

#[test]
fn a_deep_stack_stays_flat_in_json() {
    let names: Vec<String> = (0..300).map(|d| format!("f{d}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = tree(vec![stack(&names, 8, 1)].into_iter());
    assert_eq!(t.nodes.len(), 300);
    assert_eq!(t.nodes[299].parent, Some(298));
    let json = serde_json::to_string(&t).unwrap();
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back["nodes"][299]["name"], "f299");
}

#[test]
fn too_many_frames_cut_at_a_heavier_weight() {
    // 800 stacks of 4 frames of their own: each over a thousandth, yet 3200 frames in all.
    let stacks: Vec<_> = (0..800)
        .map(|i| {
            let names: Vec<String> = (0..4).map(|d| format!("f{i}_{d}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            stack(&names, 10, 1)
        })
        .collect();
    let t = tree(stacks.into_iter());
    assert_eq!(t.cut_below_bytes, 16);
    assert_eq!(t.merged_frames, 3200);
    assert_eq!(flat(&t), [("other", 8000, 800, None)]);
}

#[test]
fn a_weighting_sees_only_the_stacks_it_weighs() {
    let mut b = Builder::new();
    let main = b.child(0, 0, "native");
    let load = b.child(main, 1, "native");
    let save = b.child(main, 2, "native");
    let parse = b.child(load, 3, "native");
    b.add(parse, [(300, 3), (0, 0), (300, 3)]);
    b.add(save, [(0, 0), (600, 2), (600, 2)]);
    let names: Vec<String> = ["main", "load", "save", "parse"].map(String::from).to_vec();
    let flat = |t: &FlameTree| -> Vec<(String, u64)> {
        t.nodes.iter().map(|n| (n.name.clone(), n.bytes)).collect()
    };
    let peak = b.finish(0, &names);
    assert_eq!((peak.bytes, peak.blocks, peak.merged_frames), (300, 3, 0));
    assert_eq!(
        flat(&peak),
        [
            ("main".into(), 300),
            ("load".into(), 300),
            ("parse".into(), 300)
        ]
    );
    let leaked = b.finish(1, &names);
    assert_eq!(flat(&leaked), [("main".into(), 600), ("save".into(), 600)]);
    let allocated = b.finish(2, &names);
    assert_eq!((allocated.bytes, allocated.blocks), (900, 5));
    assert_eq!(allocated.nodes.len(), 4);
}
