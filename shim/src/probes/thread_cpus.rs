//! Which CPU each thread of the process runs on, sampled by the sampler thread on a machine with more
//! than one NUMA node, so that the report can name threads that move between nodes (their memory stays
//! behind on the node they left). Each sample reads `/proc/self/task/<tid>/stat` (field 39: the CPU
//! the thread last ran on) for every thread, and its `comm` only when the thread is first seen or has
//! moved to another node, so names set after start are caught where they matter.
//!
//! Never: runs on a one-node machine (there is nothing to find, so it costs nothing there); never
//! reports the shim's own threads; never keeps state for a thread that is gone.
use std::collections::HashMap;
use std::io::Read;

use memshim_trace::ThreadCpu;

/// The shim's helper threads are named `memshim-...` (see `threads::spawn`).
const OWN_PREFIX: &str = "memshim";

/// The sampling state.
pub struct ThreadCpus {
    /// The node of each CPU, by CPU number.
    node_of_cpu: Vec<Option<u32>>,
    /// Each live program thread's node at the last sample; `None` for the shim's own threads.
    last: HashMap<u32, Option<u32>>,
    /// Reused for every file read.
    buf: Vec<u8>,
}

impl ThreadCpus {
    /// The sampler for this machine, or `None` when it has one NUMA node (or none is known).
    pub fn new() -> Option<ThreadCpus> {
        let nodes = crate::probes::topology::read();
        if nodes.len() < 2 {
            return None;
        }
        let max = nodes.iter().flat_map(|n| &n.cpus).copied().max()?;
        let mut node_of_cpu = vec![None; max as usize + 1];
        for n in &nodes {
            for &c in &n.cpus {
                node_of_cpu[c as usize] = Some(n.id);
            }
        }
        Some(ThreadCpus {
            node_of_cpu,
            last: HashMap::new(),
            buf: Vec::with_capacity(1024),
        })
    }

    /// Every program thread's CPU now (named when new or moved to another node).
    pub fn sample(&mut self) -> Vec<ThreadCpu> {
        // Each reading opens files for a moment (see `owned_fds::probe`).
        crate::sys::owned_fds::probe(|| self.sample_now()).unwrap_or_default()
    }

    fn sample_now(&mut self) -> Vec<ThreadCpu> {
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return Vec::new();
        };
        let mut seen = Vec::with_capacity(self.last.len());
        let mut out = Vec::with_capacity(self.last.len());
        for entry in dir.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            // A thread that exited between the listing and the read is simply not sampled.
            let Some(cpu) = self.read(tid, "stat").and_then(|s| processor(&s)) else {
                continue;
            };
            seen.push(tid);
            let node = self.node_of_cpu.get(cpu as usize).copied().flatten();
            let name = match self.last.get(&tid) {
                Some(None) => continue,
                Some(Some(prev)) if node.is_none_or(|n| n == *prev) => None,
                _ => {
                    let name = self.read(tid, "comm").unwrap_or_default();
                    let name = name.trim_end().to_string();
                    if name.starts_with(OWN_PREFIX) {
                        self.last.insert(tid, None);
                        continue;
                    }
                    Some(name)
                }
            };
            if let Some(n) = node {
                self.last.insert(tid, Some(n));
            }
            out.push(ThreadCpu { tid, cpu, name });
        }
        self.last.retain(|tid, _| seen.contains(tid));
        out
    }

    fn read(&mut self, tid: u32, file: &str) -> Option<String> {
        self.buf.clear();
        let mut f = std::fs::File::open(format!("/proc/self/task/{tid}/{file}")).ok()?;
        f.read_to_end(&mut self.buf).ok()?;
        Some(String::from_utf8_lossy(&self.buf).into_owned())
    }
}

/// Field 39 of a `stat` line (the CPU last run on). The name in field 2 may hold spaces and
/// parentheses, so fields are counted from after its last `)`; the rest starts at field 3.
fn processor(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_39_counts_from_after_the_name() {
        let fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        let line = format!("42 (a (b) c) {}", fields.join(" "));
        assert_eq!(processor(&line), Some(39));
        assert_eq!(processor("42 (x) S 1 2"), None);
        assert_eq!(processor("no name"), None);
    }

    #[test]
    fn this_process_threads_are_sampled_with_their_cpu() {
        // Whatever the machine's topology, the reading of this process's threads works.
        let mut t = ThreadCpus {
            node_of_cpu: vec![Some(0); 4096],
            last: HashMap::new(),
            buf: Vec::new(),
        };
        let me = crate::sys::gettid();
        // A listing of /proc/self/task can skip a thread while others exit (as the test harness's
        // do), so this thread is looked for over a few samples.
        // Other tests of this process release descriptors of the shim's, after which readings
        // pause for a moment (see `owned_fds::released_lately`).
        let find_me = |t: &mut ThreadCpus| {
            (0..20)
                .find_map(|_| {
                    while crate::sys::owned_fds::released_lately() {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    t.sample().into_iter().find(|c| c.tid == me)
                })
                .expect("this thread, in one of 20 samples")
        };
        assert!(find_me(&mut t).name.is_some(), "named when first seen");
        assert_eq!(
            find_me(&mut t).name,
            None,
            "not named again on the same node"
        );
        // Cost per sample, for the module's record (cargo test -- --nocapture).
        let start = std::time::Instant::now();
        let mut threads = 0;
        for _ in 0..100 {
            threads = t.sample().len();
        }
        eprintln!(
            "thread CPU sample: {:?} for {threads} threads",
            start.elapsed() / 100
        );
    }
}
