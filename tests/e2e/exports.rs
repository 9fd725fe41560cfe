//! `memshim export --pprof` and `--speedscope`, read back as other tools read them. The pprof
//! profile goes through an independent protobuf decoder (prost, with the messages of pprof's
//! profile.proto declared here by their field numbers): both must hold the exact leak bytes of each
//! site, with Python frames as functions with their file and line.
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;

use prost::Message;

use crate::python::{interpreters, run_python};
use crate::report::{process_by_exe, report_json};
use crate::util::*;

#[derive(Clone, PartialEq, Message)]
struct Profile {
    #[prost(message, repeated, tag = "1")]
    sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
    #[prost(int64, tag = "14")]
    default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
struct ValueType {
    #[prost(int64, tag = "1")]
    r#type: i64,
    #[prost(int64, tag = "2")]
    unit: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(int64, tag = "2")]
    str: i64,
    #[prost(int64, tag = "3")]
    num: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Location {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "3")]
    address: u64,
    #[prost(message, repeated, tag = "4")]
    line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
struct Line {
    #[prost(uint64, tag = "1")]
    function_id: u64,
    #[prost(int64, tag = "2")]
    line: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Function {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(int64, tag = "2")]
    name: i64,
    #[prost(int64, tag = "4")]
    filename: i64,
}

/// A frame as (function, file name, line).
type Frame = (String, String, i64);

struct Decoded {
    profile: Profile,
}

impl Decoded {
    fn load(path: &Path) -> Decoded {
        let gz = std::fs::read(path).expect("the profile");
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .expect("the profile is gzip");
        Decoded {
            profile: Profile::decode(&raw[..]).expect("the profile decodes as profile.proto"),
        }
    }

    fn s(&self, i: i64) -> &str {
        &self.profile.string_table[i as usize]
    }

    /// Each sample's frames, innermost first, and its values.
    fn samples(&self) -> Vec<(Vec<Frame>, Vec<i64>)> {
        let p = &self.profile;
        p.sample
            .iter()
            .map(|s| {
                let frames = s
                    .location_id
                    .iter()
                    .map(|id| {
                        let loc = p.location.iter().find(|l| l.id == *id).expect("a location");
                        let line = &loc.line[0];
                        let f = p
                            .function
                            .iter()
                            .find(|f| f.id == line.function_id)
                            .expect("a function");
                        let file = self.s(f.filename);
                        let base = file.rsplit('/').next().unwrap_or(file);
                        (self.s(f.name).to_string(), base.to_string(), line.line)
                    })
                    .collect();
                (frames, s.value.clone())
            })
            .collect()
    }
}

fn export(dir: &TestDir) -> Decoded {
    let out = dir.path("heap.pb.gz");
    run_ok(
        memshim_cmd()
            .args(["export", "--pprof", "-o"])
            .arg(&out)
            .arg(dir.traces()),
    );
    Decoded::load(&out)
}

#[test]
fn a_c_programs_leaks_come_back_byte_for_byte_per_site() {
    let dir = TestDir::new("pprof_leaky");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let r = export(&dir);
    let types: Vec<(&str, &str)> = r
        .profile
        .sample_type
        .iter()
        .map(|t| (r.s(t.r#type), r.s(t.unit)))
        .collect();
    assert_eq!(
        types,
        [
            ("alloc_objects", "count"),
            ("alloc_space", "bytes"),
            ("inuse_objects", "count"),
            ("inuse_space", "bytes"),
        ]
    );
    assert_eq!(r.s(r.profile.default_sample_type), "inuse_space");
    // leaky.c's header: live bytes and blocks of each of its functions' sites at exit.
    let mut by_function: Vec<(String, i64, i64)> = Vec::new();
    for (frames, v) in r.samples() {
        let Some(f) = frames.iter().find(|f| f.1 == "leaky.c") else {
            continue;
        };
        if v[3] == 0 {
            continue;
        }
        match by_function.iter_mut().find(|e| e.0 == f.0) {
            Some(e) => {
                e.1 += v[3];
                e.2 += v[2];
            }
            None => by_function.push((f.0.clone(), v[3], v[2])),
        }
    }
    by_function.sort();
    assert_eq!(
        by_function,
        [
            ("grow_buffer".to_string(), 256, 1),
            ("leak_aligned".to_string(), 4096 + 512 + 100 + 64, 4),
            ("leak_calloc".to_string(), 100, 4),
            ("leak_malloc".to_string(), 300, 3),
            ("leak_strdup".to_string(), 12, 1),
            // stdio's buffer for stdout (a pipe: one 4 KiB block), allocated by printf in main.
            ("main".to_string(), 4096, 1),
        ]
    );
    // Every live byte of the report is in the profile, under the process's pid.
    let report = report_json(&dir.traces());
    let p = process_by_exe(&report, "leaky");
    let inuse: i64 = r.samples().iter().map(|(_, v)| v[3]).sum();
    assert_eq!(inuse as u64, p["leaks"]["host"]["bytes"].as_u64().unwrap());
    let pid_key = r
        .profile
        .string_table
        .iter()
        .position(|s| s == "pid")
        .unwrap() as i64;
    assert!(r.profile.sample.iter().all(|s| s
        .label
        .iter()
        .any(|l| l.key == pid_key && l.num as u64 == p["pid"].as_u64().unwrap())));
    // churn's 1000 pairs are allocations, not live memory.
    let churn: i64 = r
        .samples()
        .iter()
        .filter(|(f, _)| f.iter().any(|f| f.0 == "churn"))
        .map(|(_, v)| v[0])
        .sum();
    assert_eq!(churn, 1000);
}

#[test]
fn python_lines_are_functions_with_their_file_and_line() {
    let python = &interpreters()[0];
    let dir = TestDir::new("pprof_python");
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python/leaks/small_objects.py");
    std::fs::copy(src, dir.root.join("small_objects.py")).expect("copy the script");
    let script = [OsStr::new("small_objects.py")];
    run_python(
        &dir,
        &dir.traces(),
        &["--python-malloc"],
        python,
        &script,
        &[],
    );
    let r = export(&dir);
    let here = (
        "small_objects".to_string(),
        "small_objects.py".to_string(),
        11,
    );
    let (bytes, count) = r
        .samples()
        .iter()
        .filter(|(f, _)| f.contains(&here))
        .fold((0, 0), |(b, c), (_, v)| (b + v[3], c + v[2]));
    assert_eq!((bytes, count), (1000 * 233, 1000));
}

#[test]
fn speedscope_profiles_weigh_each_site_by_its_bytes_with_frames_shared() {
    let dir = TestDir::new("speedscope_leaky");
    let prog = dir.compile("leaky.c");
    memshim_run_ok(&dir, &prog, &[] as &[&str]);
    let out = run_ok(
        memshim_cmd()
            .args(["export", "--speedscope"])
            .arg(dir.traces()),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        doc["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let profile = &doc["profiles"][0];
    assert_eq!(profile["type"], "sampled");
    assert_eq!(profile["unit"], "bytes");
    assert!(profile["name"].as_str().unwrap().starts_with("leaky (pid "));
    let samples = profile["samples"].as_array().unwrap();
    let weights = profile["weights"].as_array().unwrap();
    assert_eq!(samples.len(), weights.len());
    // Each sample runs from the outermost frame to the innermost; leak_aligned's four sites hold
    // 4772 B, and its frame carries leaky.c and a line.
    let mut aligned = 0;
    for (s, w) in samples.iter().zip(weights) {
        let names: Vec<&serde_json::Value> = s
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &frames[i.as_u64().unwrap() as usize])
            .collect();
        if let Some(f) = names.iter().find(|f| f["name"] == "leak_aligned") {
            assert!(f["file"].as_str().unwrap().ends_with("leaky.c"), "{f}");
            assert!(f["line"].as_u64().unwrap() > 0, "{f}");
            aligned += w.as_u64().unwrap();
        }
    }
    assert_eq!(aligned, 4096 + 512 + 100 + 64);
    let total: u64 = weights.iter().map(|w| w.as_u64().unwrap()).sum();
    assert_eq!(profile["endValue"].as_u64(), Some(total));
    // Each distinct frame once.
    let mut seen: Vec<String> = frames.iter().map(|f| f.to_string()).collect();
    seen.sort();
    let n = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), n);
}

/// `memshim ARGS | head -c 1`: the reader of the output goes away after one byte.
fn into_closed_pipe(args: &[&str]) -> Outcome {
    use std::io::Read;
    use std::process::Stdio;
    let mut cmd = memshim_cmd();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    hermetic(&mut cmd);
    let mut child = cmd.spawn().expect("memshim starts");
    let mut stdout = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    let _ = stdout.read(&mut one);
    drop(stdout);
    let out = child.wait_with_output().expect("memshim ends");
    Outcome {
        stdout: Vec::new(),
        stderr: out.stderr,
        status: out.status,
        what: format!("{cmd:?}"),
    }
}

#[test]
fn a_closed_pipe_is_quiet_for_the_large_formats() {
    // Traces whose output in these formats is larger than a pipe's buffer, so the reader is gone
    // before the writer is done (the smaller ones finish into the buffer whatever the reader
    // does): many_sites' 150 sites for the JSON (many_leaks' is about 60 KiB since arrays of
    // numbers stay on one line), many_leaks' timeline for Perfetto.
    let traces = |name: &str, program: &str| {
        let dir = TestDir::new(name);
        let prog = dir.compile(program);
        memshim_run_ok(&dir, &prog, &[] as &[&str]);
        dir.traces().to_str().unwrap().to_string()
    };
    let sites = traces("closed_pipe_json", "many_sites.c");
    let timeline = traces("closed_pipe_perfetto", "many_leaks.c");
    for args in [
        vec!["report", "-f", "json", &sites],
        vec!["export", "--perfetto", &timeline],
    ] {
        let whole = run_ok(memshim_cmd().args(&args));
        assert!(
            whole.stdout.len() > 1 << 16,
            "{args:?}: only {} bytes",
            whole.stdout.len()
        );
        let out = into_closed_pipe(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", out.describe());
        assert_eq!(out.stderr_str(), "", "{args:?}");
    }
}

#[test]
fn a_pid_that_matches_no_trace_is_an_error_naming_those_there() {
    let dir = TestDir::new("pid_matches_nothing");
    let prog = dir.compile("gate_leak.c");
    memshim_run_ok(&dir, &prog, &["1", "0"]);
    let pid = process_by_exe(&report_json(&dir.traces()), "gate_leak")["pid"].clone();
    let out = run_command(
        memshim_cmd()
            .args(["report", "--pid", "1"])
            .arg(dir.traces()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert_eq!(
        out.stderr_str(),
        format!("memshim: --pid 1: no trace here is of that process (they are of pids {pid})\n")
    );
}

#[test]
fn perfetto_gives_a_program_reached_by_exec_a_track_of_its_own() {
    let dir = TestDir::new("perfetto_exec_tracks");
    let prog = dir.compile("gate_leak.c");
    // The shell allocates, then becomes gate_leak: two traces of one pid.
    let script = format!("cd . && exec {} 37 0", prog.display());
    memshim_run_ok(&dir, std::path::Path::new("/bin/sh"), &["-c", &script]);
    let out = run_ok(
        memshim_cmd()
            .args(["export", "--perfetto"])
            .arg(dir.traces()),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let names: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // One track per trace, none sharing an id.
    let traces = trace_files(&dir.traces()).len();
    assert_eq!(traces, 2, "{names:?}");
    assert_eq!(names.len(), traces, "{names:?}");
    assert_ne!(names[0].0, names[1].0, "{names:?}");
    assert!(
        names[0].1.starts_with("sh (") || names[0].1.starts_with("dash ("),
        "{names:?}"
    );
    let (leak_track, label) = &names[1];
    assert!(
        label.starts_with("gate_leak (") && label.ends_with(", after exec 1)"),
        "{label}"
    );
    // gate_leak's 37 KiB is on its own track only (a figure the shell never holds).
    let heap_tracks: Vec<u64> = events
        .iter()
        .filter(|e| e["name"] == "host heap" && e["args"]["live bytes"] == 37 * 1024)
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(heap_tracks, [*leak_track], "{names:?}");
}
