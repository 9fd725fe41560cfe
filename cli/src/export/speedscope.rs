//! speedscope's own file format (https://www.speedscope.app/file-format-schema.json): one sampled
//! profile per process, each site a sample weighted in bytes, and every distinct frame once in a
//! shared table with its file and line, so Python lines open as `function file:line`.
use std::io::{self, Write};

use rustc_hash::FxHashMap as HashMap;
use serde_json::{json, Value};

use super::collapsed::{name, weighted_sites};
use crate::args::{CollapsedBy, Memory};
use crate::replay::Replayed;
use crate::report::model::frame::Text;
use crate::report::sites::frames;
use crate::symbolize::Symbolizer;

/// Writes one file for all of `traces`.
pub fn write(
    traces: &[Replayed],
    by: CollapsedBy,
    memory: Memory,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut shared: Vec<Value> = Vec::new();
    let mut index: HashMap<(String, Option<Text>, Option<u32>), usize> = HashMap::default();
    let mut profiles = Vec::new();
    for t in traces {
        let mut sym = Symbolizer::default();
        let (mut samples, mut weights) = (Vec::new(), Vec::new());
        for (id, weight) in weighted_sites(t, by, memory) {
            // speedscope lists a sample's frames from the outermost.
            let all = frames(t, &mut sym, id);
            let stack: Vec<usize> = crate::report::model::frame::shown(&all)
                .into_iter()
                .rev()
                .map(|f| {
                    let label = name(f);
                    let key = (label.clone(), f.file.clone(), f.line);
                    let next = shared.len();
                    *index.entry(key).or_insert_with(|| {
                        let mut frame = json!({ "name": label });
                        if let Some(file) = &f.file {
                            frame["file"] = json!(file);
                        }
                        if let Some(line) = f.line {
                            frame["line"] = json!(line);
                        }
                        shared.push(frame);
                        next
                    })
                })
                .collect();
            samples.push(stack);
            weights.push(weight);
        }
        let total: u64 = weights.iter().sum();
        let exe = &t.header.exe;
        profiles.push(json!({
            "type": "sampled",
            "name": format!("{} (pid {}): {}", exe.rsplit('/').next().unwrap_or(exe), t.header.pid, what(by, memory)),
            "unit": "bytes",
            "startValue": 0,
            "endValue": total,
            "samples": samples,
            "weights": weights,
        }));
    }
    let doc = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "exporter": concat!("memshim ", env!("CARGO_PKG_VERSION")),
        "name": "memshim",
        "activeProfileIndex": 0,
        "shared": { "frames": shared },
        "profiles": profiles,
    });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}

fn what(by: CollapsedBy, memory: Memory) -> String {
    let memory = match memory {
        Memory::Host => "heap",
        Memory::Device => "device memory",
        Memory::Mmap => "mappings",
    };
    match by {
        CollapsedBy::Leaked => format!("{memory} live at the end"),
        CollapsedBy::Allocated => format!("{memory} allocated"),
        CollapsedBy::Peak => format!("{memory} live at the peak"),
    }
}
