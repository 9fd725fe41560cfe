//! The shim's settings, read once from the environment at start.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `MEMSHIM_OUTPUT` | directory for trace files | the current directory |
//! | `MEMSHIM_STACK_DEPTH` | most frames kept per stack (1–256) | 64 |
//! | `MEMSHIM_HEAP` | record the malloc family (`0` to turn off) | on |
//! | `MEMSHIM_MMAP` | record anonymous mmap/munmap/mremap (`0` to turn off) | on |
//! | `MEMSHIM_CUDA` | record CUDA driver memory calls (`0` to turn off) | on |
//! | `MEMSHIM_PYTHON` | add CPython frames to stacks (`0` to turn off) | on |
//! | `MEMSHIM_TORCH` | record PyTorch's caching allocator from the inside (`0`: driver level only) | on |
//! | `MEMSHIM_SYMBOLIZE` | symbolize in-process at exit (`0` to leave it to the CLI; a fork child only when `1`) | on, fork children off |
//! | `MEMSHIM_SAMPLE_BYTES` | sample one host allocation per this many bytes on average (`0`: every one) | 0 |
//! | `MEMSHIM_SAMPLE_EVENTS` | with sampling: `sampled` records only sampled allocations and counts the rest; `all` records every allocation and free | sampled |
//! | `MEMSHIM_PLACEMENT_BYTES` | sample the NUMA node of host blocks at least this big (`0`: never) | 1M |
//! | `MEMSHIM_COPY_EVENT_BYTES` | time asynchronous copies of at least this size on the GPU with CUDA events (`off`: none) | 64K |
//! | `MEMSHIM_CUPTI` | `1`: collect CUPTI's unified-memory counters | off |
//! | `MEMSHIM_CUPTI_LIB` | where `libcupti.so` is, when the process has none loaded and its CUDA libraries' directories, the loader's path and `/usr/local/cuda` lack it | searched |
//! | `MEMSHIM_UNWIND` | `libunwind` (the default, when the system has it) or `gcc` | libunwind |
//! | `MEMSHIM_COMPRESS` | zstd level for trace frames (`0` for none) | 3 |
//! | `MEMSHIM_QUIET` | `1`: no line on stderr at exit | off |
//! | `MEMSHIM_DISABLE` | `1`: load but record nothing | off |
//!
//! `docs/settings.md` explains each for users; a test keeps both tables equal to what this file reads.
use std::path::{Path, PathBuf};

/// The largest stack depth that can be asked for.
pub const MAX_STACK_DEPTH: usize = 256;

/// Validated settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Where trace files go; empty means the current directory.
    pub output_dir: String,
    /// Frames kept per stack.
    pub stack_depth: usize,
    /// Record the malloc family.
    pub heap: bool,
    /// Record anonymous mappings.
    pub mmap: bool,
    /// Record CUDA driver memory calls.
    pub cuda: bool,
    /// Add CPython frames to stacks when the process runs CPython.
    pub python: bool,
    /// Symbolize in-process at exit.
    pub symbolize: bool,
    /// Symbolize in-process at exit in a fork child too: only when asked for by name. A child
    /// shares its parent's modules, which the CLI names offline from the module map, and naming
    /// them again in every child cost each one the parse of its libraries' debug information
    /// (a program forking 50 children ran 19 s instead of 0.6 s).
    pub symbolize_forked: bool,
    /// zstd level, `None` for uncompressed frames.
    pub compress: Option<i32>,
    /// The unwinder: "libunwind" or "gcc".
    pub unwind: String,
    /// Mean bytes between sampled host stacks; 0 takes every stack.
    pub sample_bytes: u64,
    /// With sampling, record only the sampled allocations as events (the others are counted).
    pub sample_thin: bool,
    /// Host blocks at least this big have their pages' NUMA nodes sampled; 0 never.
    pub placement_bytes: u64,
    /// Asynchronous copies of at least this many bytes are timed on the GPU with events; 0 never.
    pub copy_event_bytes: u64,
    /// Collect CUPTI's unified-memory counters once the process uses CUDA.
    pub cupti: bool,
    /// Attach to PyTorch's caching allocator (checked releases only).
    pub torch: bool,
    /// Where libcupti is, when the loader's path and the toolkit's usual places do not have it.
    pub cupti_lib: Option<String>,
    /// No message at exit.
    pub quiet: bool,
    /// Record nothing.
    pub disabled: bool,
    /// The distributed-job rank the launcher's variables give, if any.
    pub rank: Option<memshim_trace::RankInfo>,
    /// Problems with the settings, to be reported once.
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads the settings through `get`, which returns a variable's value if it is set.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Config {
        let mut warnings = Vec::new();
        let mut flag = |name: &str, default: bool| match get(name).as_deref() {
            None | Some("") => default,
            Some("0") | Some("false") | Some("off") | Some("no") => false,
            Some("1") | Some("true") | Some("on") | Some("yes") => true,
            Some(other) => {
                warnings.push(format!(
                    "{name}={other} is not 0 or 1; using {}",
                    if default { 1 } else { 0 }
                ));
                default
            }
        };
        let heap = flag("MEMSHIM_HEAP", true);
        let mmap = flag("MEMSHIM_MMAP", true);
        let cuda = flag("MEMSHIM_CUDA", true);
        let python = flag("MEMSHIM_PYTHON", true);
        let symbolize = flag("MEMSHIM_SYMBOLIZE", true);
        let symbolize_forked = symbolize && get("MEMSHIM_SYMBOLIZE").is_some_and(|v| !v.is_empty());
        let quiet = flag("MEMSHIM_QUIET", false);
        // Off by default: CUPTI is heavy to load, and only one tool may hold it.
        let cupti = flag("MEMSHIM_CUPTI", false);
        let torch = flag("MEMSHIM_TORCH", true);
        let disabled = flag("MEMSHIM_DISABLE", false);
        let stack_depth = match get("MEMSHIM_STACK_DEPTH") {
            None => 64,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=MAX_STACK_DEPTH).contains(&n) => n,
                _ => {
                    warnings.push(format!(
                        "MEMSHIM_STACK_DEPTH={v} is not a number from 1 to {MAX_STACK_DEPTH}; using 64"
                    ));
                    64
                }
            },
        };
        let compress = match get("MEMSHIM_COMPRESS") {
            None => Some(3),
            Some(v) => match v.parse::<i32>() {
                Ok(0) => None,
                Ok(n) if (1..=19).contains(&n) => Some(n),
                _ => {
                    warnings.push(format!(
                        "MEMSHIM_COMPRESS={v} is not a zstd level from 0 to 19; using 3"
                    ));
                    Some(3)
                }
            },
        };
        let unwind = match get("MEMSHIM_UNWIND").as_deref() {
            None | Some("") | Some("libunwind") => "libunwind".to_string(),
            Some("gcc") => "gcc".to_string(),
            Some(other) => {
                warnings.push(format!(
                    "MEMSHIM_UNWIND={other} is not libunwind or gcc; using libunwind"
                ));
                "libunwind".to_string()
            }
        };
        let sample_bytes = match get("MEMSHIM_SAMPLE_BYTES") {
            None => 0,
            Some(v) => parse_bytes(&v).unwrap_or_else(|| {
                warnings.push(format!(
                    "MEMSHIM_SAMPLE_BYTES={v} is not a byte count (like 524288 or 512K); taking every stack"
                ));
                0
            }),
        };
        let sample_thin = match get("MEMSHIM_SAMPLE_EVENTS").as_deref() {
            None | Some("") | Some("sampled") => true,
            Some("all") => false,
            Some(other) => {
                warnings.push(format!(
                    "MEMSHIM_SAMPLE_EVENTS={other} is not sampled or all; recording only sampled allocations"
                ));
                true
            }
        };
        let placement_bytes = match get("MEMSHIM_PLACEMENT_BYTES") {
            None => 1 << 20,
            Some(v) => parse_bytes(&v).unwrap_or_else(|| {
                warnings.push(format!(
                    "MEMSHIM_PLACEMENT_BYTES={v} is not a byte count; using 1M"
                ));
                1 << 20
            }),
        };
        // Smaller copies are dominated by launch latency, where a bandwidth means little and two event
        // records would cost more than the copy's own call.
        let copy_event_bytes = match get("MEMSHIM_COPY_EVENT_BYTES").as_deref() {
            None | Some("") => 64 << 10,
            Some("off") => 0,
            Some(v) => parse_bytes(v).map(|n| n.max(1)).unwrap_or_else(|| {
                warnings.push(format!(
                    "MEMSHIM_COPY_EVENT_BYTES={v} is not a byte count or off; using 64K"
                ));
                64 << 10
            }),
        };
        Config {
            // Resolved now: the program may chdir before a fork child creates its trace.
            output_dir: absolute_dir(&get("MEMSHIM_OUTPUT").unwrap_or_default())
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default(),
            unwind,
            sample_bytes,
            sample_thin,
            placement_bytes,
            copy_event_bytes,
            cupti,
            torch,
            cupti_lib: get("MEMSHIM_CUPTI_LIB").filter(|v| !v.is_empty()),
            stack_depth,
            heap,
            mmap,
            cuda,
            python,
            symbolize,
            symbolize_forked,
            compress,
            quiet,
            disabled,
            rank: crate::rank::from_lookup(&get),
            warnings,
        }
    }

    /// Reads the settings from the process environment with `getenv` (no allocation, no lock).
    pub fn from_env() -> Config {
        Config::from_lookup(crate::sys::getenv)
    }
}

/// `512`, `512K`, `4M`, `1G` (powers of 1024).
fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mult) = match v.chars().last()? {
        'k' | 'K' => (&v[..v.len() - 1], 1 << 10),
        'm' | 'M' => (&v[..v.len() - 1], 1 << 20),
        'g' | 'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// The output directory as an absolute path, resolved against the working directory of the moment
/// (the shim resolves `MEMSHIM_OUTPUT` once at start, so a program's later `chdir` moves nothing).
pub fn absolute_dir(dir: &str) -> Result<PathBuf, String> {
    let dir = Path::new(dir);
    if dir.as_os_str().is_empty() {
        return std::env::current_dir()
            .map_err(|e| format!("cannot find the current directory: {e}"));
    }
    if dir.is_absolute() {
        return Ok(dir.to_path_buf());
    }
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot find the current directory: {e}"))?;
    Ok(cwd.join(dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn sample_bytes_with_suffixes() {
        assert_eq!(
            cfg(&[("MEMSHIM_SAMPLE_BYTES", "512K")]).sample_bytes,
            512 << 10
        );
        assert_eq!(cfg(&[("MEMSHIM_SAMPLE_BYTES", "3000")]).sample_bytes, 3000);
        let c = cfg(&[("MEMSHIM_SAMPLE_BYTES", "lots")]);
        assert_eq!(c.sample_bytes, 0);
        assert!(c.warnings[0].contains("MEMSHIM_SAMPLE_BYTES=lots"));
    }

    #[test]
    fn sample_events_thin_unless_all() {
        assert!(cfg(&[]).sample_thin);
        assert!(!cfg(&[("MEMSHIM_SAMPLE_EVENTS", "all")]).sample_thin);
        let c = cfg(&[("MEMSHIM_SAMPLE_EVENTS", "most")]);
        assert!(c.sample_thin);
        assert!(c.warnings[0].contains("MEMSHIM_SAMPLE_EVENTS=most"));
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]);
        assert_eq!(c.stack_depth, 64);
        assert!(c.heap && c.mmap && c.symbolize && !c.quiet && !c.disabled);
        assert!(!c.symbolize_forked);
        assert_eq!(c.compress, Some(3));
        // The working directory at start, so a later chdir moves nothing.
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(c.output_dir, cwd.to_string_lossy());
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn values_and_bad_values() {
        let c = cfg(&[
            ("MEMSHIM_OUTPUT", "/tmp/x"),
            ("MEMSHIM_STACK_DEPTH", "12"),
            ("MEMSHIM_MMAP", "0"),
            ("MEMSHIM_COMPRESS", "0"),
            ("MEMSHIM_HEAP", "maybe"),
        ]);
        assert_eq!(c.output_dir, "/tmp/x");
        assert_eq!(c.stack_depth, 12);
        assert!(!c.mmap && c.heap);
        assert_eq!(c.compress, None);
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("MEMSHIM_HEAP=maybe"));
        let c = cfg(&[("MEMSHIM_STACK_DEPTH", "9999")]);
        assert_eq!(c.stack_depth, 64);
        assert!(c.warnings[0].contains("1 to 256"));
    }

    #[test]
    fn fork_children_symbolize_only_when_asked_by_name() {
        assert!(cfg(&[("MEMSHIM_SYMBOLIZE", "1")]).symbolize_forked);
        let off = cfg(&[("MEMSHIM_SYMBOLIZE", "0")]);
        assert!(!off.symbolize && !off.symbolize_forked);
        assert!(!cfg(&[("MEMSHIM_SYMBOLIZE", "")]).symbolize_forked);
    }

    #[test]
    fn copy_event_threshold() {
        assert_eq!(cfg(&[]).copy_event_bytes, 64 << 10);
        assert_eq!(
            cfg(&[("MEMSHIM_COPY_EVENT_BYTES", "1M")]).copy_event_bytes,
            1 << 20
        );
        assert_eq!(
            cfg(&[("MEMSHIM_COPY_EVENT_BYTES", "off")]).copy_event_bytes,
            0
        );
        // 0 would read as "never"; a threshold of 0 bytes means every copy.
        assert_eq!(
            cfg(&[("MEMSHIM_COPY_EVENT_BYTES", "0")]).copy_event_bytes,
            1
        );
        let c = cfg(&[("MEMSHIM_COPY_EVENT_BYTES", "big")]);
        assert_eq!(c.copy_event_bytes, 64 << 10);
        assert!(c.warnings[0].contains("MEMSHIM_COPY_EVENT_BYTES=big"));
    }

    #[test]
    fn a_relative_directory_is_resolved_once() {
        let abs = absolute_dir("traces").unwrap();
        assert!(abs.is_absolute());
        assert_eq!(abs, std::env::current_dir().unwrap().join("traces"));
        assert_eq!(absolute_dir("/x/y").unwrap(), PathBuf::from("/x/y"));
    }

    /// The `MEMSHIM_*` names in table rows (`| \`MEMSHIM_X\` | ...`) of `text`, in order.
    fn table_names(text: &str) -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim_start_matches("//! ").strip_prefix("| `MEMSHIM_"))
            .filter_map(|rest| rest.split('`').next())
            .map(|name| format!("MEMSHIM_{name}"))
            .collect()
    }

    /// The variables this file reads: every `"MEMSHIM_X"` literal of its code (not of its tests).
    fn names_read() -> std::collections::BTreeSet<String> {
        let source = include_str!("config.rs");
        let code = &source[..source.find("#[cfg(test)]").expect("the tests")];
        code.split("\"MEMSHIM_")
            .skip(1)
            .filter_map(|rest| {
                let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c == '_'))?;
                rest[end..]
                    .starts_with('"')
                    .then(|| format!("MEMSHIM_{}", &rest[..end]))
            })
            .collect()
    }

    #[test]
    fn the_settings_tables_name_every_variable_the_shim_reads() {
        let read = names_read();
        assert!(read.len() >= 18, "{read:?}");
        let here: std::collections::BTreeSet<String> =
            table_names(include_str!("config.rs")).into_iter().collect();
        assert_eq!(here, read, "this file's table against what it reads");
        let docs = include_str!("../../docs/settings.md");
        let shim_part = &docs[..docs.find("## The CLI").expect("the CLI's table")];
        let documented: std::collections::BTreeSet<String> =
            table_names(shim_part).into_iter().collect();
        assert_eq!(
            documented, read,
            "docs/settings.md against what the shim reads"
        );
    }

    /// Every `.rs` file under `dir`, with its path.
    fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).expect("the source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.push((path, text));
            }
        }
    }

    #[test]
    fn only_this_file_reads_the_shims_variables() {
        // The table test above holds for the shim only while every variable is read here: a
        // `"MEMSHIM_X"` name anywhere else in the shim's code (its tests left out) is one it reads
        // past this file, and past the tables.
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        assert!(files.len() > 50, "{} files", files.len());
        let elsewhere: Vec<String> = files
            .iter()
            .filter(|(path, _)| !path.ends_with("src/config.rs"))
            .flat_map(|(path, text)| {
                let code = text.find("#[cfg(test)]").map_or(&text[..], |i| &text[..i]);
                code.split("\"MEMSHIM_")
                    .skip(1)
                    .filter_map(|rest| {
                        let end = rest
                            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                            .unwrap_or(rest.len());
                        rest[end..].starts_with('"').then(|| &rest[..end])
                    })
                    .map(move |name| format!("{}: MEMSHIM_{name}", path.display()))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(elsewhere.is_empty(), "{elsewhere:#?}");
    }
}
