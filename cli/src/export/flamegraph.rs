//! A flame-graph SVG drawn by inferno (the flamegraph.pl look people know: click to zoom, search,
//! a title per frame with its bytes) from the same merged trees as the page's flame graph (see
//! `report::flame`): one root frame per process, weighted by bytes live at the peak, live at the end
//! or allocated. It never merges or hides frames of its own.
use std::io::{self, Write};

use inferno::flamegraph::{self, color::BasicPalette, Options, Palette};

use crate::args::CollapsedBy;
use crate::replay::Replayed;
use crate::report::model::FlameTree;
use crate::symbolize::Symbolizer;

/// Writes one SVG for all of `traces`; an error when none of them has a byte to draw.
pub fn write(traces: &[Replayed], by: CollapsedBy, out: &mut dyn Write) -> io::Result<()> {
    let mut lines = Vec::new();
    for t in traces {
        let mut sym = Symbolizer::default();
        let section = crate::report::flame::section(t, &mut sym);
        let tree = match by {
            CollapsedBy::Peak => section.peak,
            CollapsedBy::Leaked => section.leaked,
            CollapsedBy::Allocated => section.allocated,
        };
        let exe = &t.header.exe;
        let root = format!(
            "{} (pid {})",
            exe.rsplit('/').next().unwrap_or(exe),
            t.header.pid
        );
        collapse(&tree, &clean(&root), &mut lines);
    }
    if lines.is_empty() {
        return Err(io::Error::other(format!(
            "no heap memory to draw: nothing was {}",
            match by {
                CollapsedBy::Peak => "live when the heap peaked",
                CollapsedBy::Leaked => "still live at the end",
                CollapsedBy::Allocated => "allocated",
            }
        )));
    }
    let mut opt = Options::default();
    opt.title = format!("memshim: {}", title(by));
    opt.count_name = "bytes".into();
    opt.name_type = "Frame:".into();
    // Colours from the frame's name, so that the same program draws the same picture.
    opt.hash = true;
    opt.colors = Palette::Basic(BasicPalette::Mem);
    flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), out)
}

fn title(by: CollapsedBy) -> &'static str {
    match by {
        CollapsedBy::Peak => "heap live at the peak",
        CollapsedBy::Leaked => "heap live at the end",
        CollapsedBy::Allocated => "heap allocated over the run",
    }
}

/// The tree as collapsed stacks: one line per frame that holds bytes of its own (more than its
/// children), so that inferno's merge gives the tree back.
fn collapse(tree: &FlameTree, root: &str, lines: &mut Vec<String>) {
    let mut below = vec![0u64; tree.nodes.len()];
    let mut top = 0;
    for n in &tree.nodes {
        match n.parent {
            Some(p) => below[p as usize] += n.bytes,
            None => top += n.bytes,
        }
    }
    if tree.bytes > top {
        lines.push(format!("{root} {}", tree.bytes - top));
    }
    // Parents come before their children, so each frame's path is its parent's and its name.
    let mut paths: Vec<String> = Vec::with_capacity(tree.nodes.len());
    for (n, below) in tree.nodes.iter().zip(below) {
        let parent = n.parent.map_or(root, |p| paths[p as usize].as_str());
        let path = format!("{parent};{}", clean(&n.name));
        if n.bytes > below {
            lines.push(format!("{path} {}", n.bytes - below));
        }
        paths.push(path);
    }
}

/// Semicolons separate frames and the last space separates the weight: keep both out of names.
fn clean(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::FlameNode;

    fn node(name: &str, bytes: u64, parent: Option<u32>) -> FlameNode {
        FlameNode {
            name: name.into(),
            kind: "native",
            bytes,
            blocks: 1,
            parent,
        }
    }

    #[test]
    fn a_tree_collapses_to_the_bytes_each_frame_holds_itself() {
        let tree = FlameTree {
            bytes: 1000,
            blocks: 3,
            cut_below_bytes: 1,
            merged_frames: 0,
            nodes: vec![
                node("main", 900, None),
                node("load;x", 600, Some(0)),
                node("parse", 100, Some(1)),
                node("save", 200, Some(0)),
            ],
        };
        let mut lines = Vec::new();
        collapse(&tree, "prog (pid 7)", &mut lines);
        assert_eq!(
            lines,
            [
                "prog (pid 7) 100",
                "prog (pid 7);main 100",
                "prog (pid 7);main;load:x 500",
                "prog (pid 7);main;load:x;parse 100",
                "prog (pid 7);main;save 200",
            ]
        );
        let mut svg = Vec::new();
        let mut opt = Options::default();
        opt.count_name = "bytes".into();
        flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(
            svg.contains("<title>load:x (600 bytes, 60.00%)</title>"),
            "{svg}"
        );
    }
}
