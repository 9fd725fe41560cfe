//! The machine's NUMA topology from sysfs, for the trace's start: nodes, their CPUs and distances.
//! A machine without `/sys/devices/system/node` is one node holding every CPU.
use memshim_trace::NumaNode;

/// The nodes, by number.
pub fn read() -> Vec<NumaNode> {
    let mut nodes: Vec<NumaNode> = std::fs::read_dir("/sys/devices/system/node")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id: u32 = name.strip_prefix("node")?.parse().ok()?;
            let read = |f: &str| std::fs::read_to_string(e.path().join(f)).unwrap_or_default();
            Some(NumaNode {
                id,
                cpus: parse_list(read("cpulist").trim()),
                distances: read("distance")
                    .split_whitespace()
                    .filter_map(|d| d.parse().ok())
                    .collect(),
            })
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    nodes
}

/// "0-3,8,10-11" → [0, 1, 2, 3, 8, 10, 11].
pub fn parse_list(s: &str) -> Vec<u32> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if a <= b => (a..=b).collect(),
                _ => Vec::new(),
            },
            None => p.parse().ok().into_iter().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_lists() {
        assert_eq!(super::parse_list("0-3,8,10-11"), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(super::parse_list(""), Vec::<u32>::new());
        assert!(
            !super::read().is_empty() || !std::path::Path::new("/sys/devices/system/node").exists()
        );
    }
}
