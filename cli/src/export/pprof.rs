//! pprof's `profile.proto`, gzipped: the format `go tool pprof`, Pyroscope, Parca and Polar Signals
//! read. One profile holds every process: each site is a sample labelled with its process's pid and
//! program, whose values are, as in Go's heap profiles, `alloc_objects`, `alloc_space`,
//! `inuse_objects` and `inuse_space` (live at the end; the default). Python frames are functions
//! with their file and line, like native ones.
use std::io::{self, Write};

use flate2::write::GzEncoder;
use memshim_trace::UNSAMPLED;
use rustc_hash::FxHashMap as HashMap;

use super::collapsed::site_stats;
use super::protobuf::Message;
use crate::args::Memory;
use crate::replay::Replayed;
use crate::report::model::FrameOut;
use crate::report::redact::Redactions;
use crate::report::sites::frames;
use crate::symbolize::Symbolizer;

/// Writes one gzipped profile of `memory` for all of `traces`, every name and path redacted with
/// `redact` when given.
pub fn write(
    traces: &[Replayed],
    memory: Memory,
    redact: Option<&Redactions>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut p = Profile::default();
    p.string(""); // Index 0 is the empty string, by the format's rule.
    let mut profile = Message::default();
    for (kind, unit) in [
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ] {
        profile.message(1, &p.value_type(kind, unit));
    }
    let mut comments = Vec::new();
    for t in traces {
        let sampled = memory == Memory::Host && t.heap.sample_bytes > 0;
        if sampled {
            comments.push(format!(
                "pid {}: heap stacks sampled every {} bytes: inuse values are estimates, alloc values count the sampled allocations only",
                t.header.pid, t.heap.sample_bytes
            ));
        }
        let mut sym = Symbolizer::default();
        for (id, s) in site_stats(t, memory, false) {
            if id == UNSAMPLED {
                continue;
            }
            let (inuse_objects, inuse_space) = if sampled {
                (
                    s.est_live_count.round() as u64,
                    s.est_live_bytes.round() as u64,
                )
            } else {
                (s.live_count, s.live_bytes)
            };
            let values = [s.allocations, s.allocated_bytes, inuse_objects, inuse_space];
            if values.iter().all(|v| *v == 0) {
                continue;
            }
            let locations: Vec<u64> = frames(t, &mut sym, id)
                .iter()
                .map(|f| p.location(f))
                .collect();
            let mut sample = Message::default();
            sample.packed(1, locations).packed(2, values);
            sample.message(3, &p.label_num("pid", u64::from(t.header.pid)));
            let exe = &t.header.exe;
            let program = exe.rsplit('/').next().unwrap_or(exe).to_string();
            sample.message(3, &p.label_str("process", &program));
            profile.message(2, &sample);
        }
    }
    for loc in std::mem::take(&mut p.locations) {
        profile.message(4, &loc);
    }
    for f in std::mem::take(&mut p.functions) {
        profile.message(5, &f);
    }
    let comment_ids: Vec<u64> = comments.iter().map(|c| p.string(c) as u64).collect();
    let start = traces
        .iter()
        .map(|t| t.header.start_unix_ns)
        .min()
        .unwrap_or(0);
    let period_type = p.value_type("space", "bytes");
    let default_type = p.string("inuse_space");
    for s in &p.strings {
        match redact {
            Some(r) => profile.bytes(6, r.text(s).as_bytes()),
            None => profile.bytes(6, s.as_bytes()),
        };
    }
    profile
        .uint(9, start)
        .message(11, &period_type)
        .uint(12, 1)
        .packed(13, comment_ids)
        .uint(14, default_type as u64);
    let mut gz = GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&profile.into_bytes())?;
    gz.finish()?.flush()
}

/// The profile's tables, each entry written once and referred to by id.
#[derive(Default)]
struct Profile {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    functions: Vec<Message>,
    function_ids: HashMap<(i64, i64), u64>,
    locations: Vec<Message>,
    location_ids: HashMap<(u64, u64, i64), u64>,
}

impl Profile {
    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.string_ids.get(s) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), i);
        i
    }

    fn value_type(&mut self, kind: &str, unit: &str) -> Message {
        let mut m = Message::default();
        m.int(1, self.string(kind)).int(2, self.string(unit));
        m
    }

    fn label_num(&mut self, key: &str, v: u64) -> Message {
        let mut m = Message::default();
        m.int(1, self.string(key)).uint(3, v);
        m
    }

    fn label_str(&mut self, key: &str, v: &str) -> Message {
        let mut m = Message::default();
        m.int(1, self.string(key)).int(2, self.string(v));
        m
    }

    /// The location of one frame: its function (by name and file) and line; native frames keep
    /// their return address, Python frames (whose addresses the shim made up) have none.
    fn location(&mut self, f: &FrameOut) -> u64 {
        let name = match &f.function {
            Some(n) => n.to_string(),
            None => format!(
                "{} {}",
                f.module
                    .as_deref()
                    .map_or("?", |m| m.rsplit('/').next().unwrap_or(m)),
                f.address
            ),
        };
        let (name, file) = (
            self.string(&name),
            self.string(f.file.as_deref().unwrap_or("")),
        );
        let next = self.functions.len() as u64 + 1;
        let function = *self.function_ids.entry((name, file)).or_insert_with(|| {
            let mut m = Message::default();
            m.uint(1, next).int(2, name).int(3, name).int(4, file);
            self.functions.push(m);
            next
        });
        let address = if f.kind == "python" {
            0
        } else {
            u64::from_str_radix(f.address.trim_start_matches("0x"), 16).unwrap_or(0)
        };
        let line = i64::from(f.line.unwrap_or(0));
        let next = self.locations.len() as u64 + 1;
        *self
            .location_ids
            .entry((address, function, line))
            .or_insert_with(|| {
                let mut l = Message::default();
                l.uint(1, function).int(2, line);
                let mut m = Message::default();
                m.uint(1, next).uint(3, address).message(4, &l);
                self.locations.push(m);
                next
            })
    }
}
