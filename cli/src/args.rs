//! The command line, as clap sees it. `settings` turns it into one checked value per subcommand before
//! anything runs.
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// memshim finds memory bottlenecks in unmodified programs: leaks, growth, peaks, by call site.
#[derive(Parser, Debug)]
#[command(name = "memshim", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command with libmemshim.so preloaded; every process it starts writes a trace.
    Run {
        /// Directory for the traces (created if missing; default: ./memshim-<command>-<time>).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Print nothing of memshim's own, so stderr holds only the command's output.
        #[arg(short, long)]
        quiet: bool,
        /// Make CPython allocate every object with malloc (PYTHONMALLOC=malloc), so each object has
        /// its own site; without it, objects of 512 bytes or less come from pymalloc's arenas and
        /// only the arenas (mappings of 256 KiB or 1 MiB) are seen. Slower: every small object
        /// becomes a recorded allocation.
        #[arg(long)]
        python_malloc: bool,
        /// After the command, check its traces and exit with status 3 when a limit is broken (unless the
        /// command itself failed: its status wins); repeat for several: leaked-heap=SIZE,
        /// peak-heap=SIZE, leaked-device=SIZE, peak-device=SIZE (SIZE like 24MiB, 1.5G or bytes;
        /// suffixes are powers of 1024) or growth (any site whose memory kept growing). Leaks are
        /// summed over every process, peaks are the highest of any one process; the driver's own
        /// memory is left out, and under PyTorch's allocator leaked device memory is the tensors
        /// still held at exit.
        #[arg(long = "fail-on", value_name = "LIMIT")]
        fail_on: Vec<crate::gate::Limit>,
        /// Record host heap stacks for about one allocation per SIZE bytes (like 512K) instead of
        /// every one; totals, live bytes and leak totals stay exact, sites become estimates. The
        /// same as MEMSHIM_SAMPLE_BYTES=SIZE.
        #[arg(long, value_name = "SIZE", value_parser = crate::byte_size::parse)]
        sample: Option<u64>,
        /// With --fail-on: leaks to leave out of the limits, in LeakSanitizer's format (see
        /// `memshim report --suppressions`).
        #[arg(long, value_name = "FILE")]
        suppressions: Option<PathBuf>,
        /// The command and its arguments (put them after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Load the shim into a process that is already running and trace it from now on (x86-64
    /// Linux, glibc); detach after --duration, or on Ctrl-C, and the process goes on untraced.
    /// Needs permission to ptrace it (the same user, and kernel.yama.ptrace_scope 0, or root).
    Attach {
        /// The process to attach to.
        pid: i32,
        /// Detach after this many seconds (default: on Ctrl-C, or when the process ends).
        #[arg(long, value_name = "SECONDS")]
        duration: Option<f64>,
        /// Directory for the trace (created if missing; default: ./memshim-<program>-<pid>-<time>).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Print nothing of memshim's own but errors.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Watch a traced process live: its memory now and at its peak, each GPU, the sites holding the
    /// most, growth and copies, read from its trace as the shim writes it (the program pays nothing
    /// more). q quits; the program goes on.
    Top {
        /// A process being traced (started by `memshim run` or attached to), a trace file, or a
        /// directory of traces (the one being written is shown); default: a trace being written
        /// here or in a ./memshim-* directory.
        target: Option<String>,
        /// Seconds between readings of the trace.
        #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
        interval: f64,
    },
    /// Report what a traced process (started by `memshim run` or attached to) holds now, while it
    /// runs on: its shim writes out what it recorded (one thread is held for that moment, with
    /// ptrace, as `attach` does), then its trace so far is reported.
    Snapshot {
        /// The process (or the `memshim run` that started it).
        pid: u32,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Sites to show per section in text output.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Write the report to this file instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Print nothing of memshim's own but warnings and errors.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Replay traces into a report.
    Report {
        /// Trace files, or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Sites to show per section in text output.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Write the report to this file instead of standard output.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Only the program's events from this many seconds after each process started.
        #[arg(long)]
        since: Option<f64>,
        /// Only the program's events up to this many seconds after each process started (leaks are
        /// then what was still held at that moment).
        #[arg(long)]
        until: Option<f64>,
        /// Colour the text report: auto (on a terminal, unless NO_COLOR is set), always or never.
        #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
        color: String,
        /// Hide home directories, the user and host names and the command's arguments.
        #[arg(long)]
        redact: bool,
        /// Only these processes (repeat for several).
        #[arg(long = "pid")]
        pids: Vec<u32>,
        /// Only processes of this program (repeat for several): its file name (`python3`), its
        /// command as the overview names it (`git pack-objects`), or its script's file name.
        #[arg(long = "program", value_name = "NAME")]
        programs: Vec<String>,
        /// Leave out processes of this program (repeat for several), named as for --program.
        #[arg(long = "exclude", value_name = "NAME")]
        excludes: Vec<String>,
        /// Leave out sites holding fewer bytes than this (like 4096, 64K or 1.5MiB).
        #[arg(long, default_value = "0", value_parser = crate::byte_size::parse)]
        min_bytes: u64,
        /// Exit with status 3 when a limit is broken (repeat for several): leaked-heap=SIZE,
        /// peak-heap=SIZE, leaked-device=SIZE, peak-device=SIZE (SIZE like 24MiB, 1.5G or bytes;
        /// suffixes are powers of 1024) or growth (any site whose memory kept growing). Leaks are
        /// summed over every process, peaks are the highest of any one process; the driver's own
        /// memory is left out, and under PyTorch's allocator leaked device memory is the tensors
        /// still held at exit.
        #[arg(long = "fail-on", value_name = "LIMIT")]
        fail_on: Vec<crate::gate::Limit>,
        /// Show every frame of a stack: by default start-up frames (`_start`, `__libc_start_main`),
        /// Python's import machinery and CPython's own frames around Python code are left out
        /// (the JSON report keeps them, marked `hidden`).
        #[arg(long)]
        all_frames: bool,
        /// Leaks to set apart from the program's, in LeakSanitizer's format: `leak:PATTERN` lines
        /// (PATTERN a function, file or module name of any frame, `*` for any characters) and `#`
        /// comments. Suppressed bytes are reported apart, with the rule, and `--fail-on
        /// leaked-heap` does not count them.
        #[arg(long, value_name = "FILE")]
        suppressions: Option<PathBuf>,
    },
    /// Measure this machine's ceilings (host memory bandwidth; GPU copy bandwidth from pageable and
    /// pinned memory) and store them, so reports compare achieved bandwidth against them.
    Bench {
        /// Where to store them (default: ~/.cache/memshim/ceilings.json, or MEMSHIM_CEILINGS).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Small buffers: a few seconds, less exact.
        #[arg(long)]
        quick: bool,
    },
    /// What changed between two runs: peaks, leaks by site, transfers.
    Diff {
        /// The first run's traces (file or directory).
        before: PathBuf,
        /// The second run's traces.
        after: PathBuf,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = DiffFormat::Text)]
        format: DiffFormat,
        /// Sites shown per process in text and Markdown output.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Leave out sites whose leaked bytes changed by less than this (like 64, 4K or 1.5MiB):
        /// allocations that differ by a few bytes from run to run.
        #[arg(long, default_value = "0", value_parser = crate::byte_size::parse)]
        min_bytes: u64,
    },
    /// Export for other tools: collapsed stacks for flame graphs (flamegraph.pl, inferno), a
    /// speedscope profile, a pprof profile (go tool pprof, Pyroscope, Parca), or a timeline for the Perfetto UI and
    /// chrome://tracing.
    #[command(group(clap::ArgGroup::new("kind").required(true).args(["collapsed", "speedscope", "pprof", "perfetto", "flamegraph"])))]
    Export {
        /// Trace files, or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Collapsed stacks, weighted by bytes.
        #[arg(long)]
        collapsed: bool,
        /// A speedscope profile (its own JSON format): one profile per process, frames with their
        /// file and line, weighted as --by says.
        #[arg(long)]
        speedscope: bool,
        /// A pprof profile (gzipped profile.proto): alloc_objects, alloc_space, inuse_objects and
        /// inuse_space (the default) per site, each sample labelled with its pid and program.
        /// Binary: write it with -o FILE.pb.gz.
        #[arg(long)]
        pprof: bool,
        /// A timeline (Chrome trace-event JSON): memory over time and copies per thread.
        #[arg(long)]
        perfetto: bool,
        /// A flame-graph SVG of the host heap (flamegraph.pl's look: click to zoom, Ctrl-F to
        /// search), written to FILE.svg: the report's flame graph, weighted as --by says, one
        /// root frame per process.
        #[arg(long, value_name = "FILE.svg", conflicts_with = "output")]
        flamegraph: Option<PathBuf>,
        /// Weight of collapsed stacks, speedscope samples and the flame graph: bytes still live at the end, or bytes allocated over the run.
        #[arg(long, value_enum, default_value_t = CollapsedBy::Leaked)]
        by: CollapsedBy,
        /// Which memory.
        #[arg(long, value_enum, default_value_t = Memory::Host)]
        memory: Memory,
        /// Write to this file instead of standard output.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Hide home directories, the user and host names, as `report --redact` does.
        #[arg(long)]
        redact: bool,
        /// Keep every frame in collapsed stacks and speedscope profiles (start-up, import machinery
        /// and interpreter frames are left out by default, as in `report`).
        #[arg(long)]
        all_frames: bool,
    },
    /// Show a trace's header, event counts, dropped events and whether it is truncated.
    Info {
        /// Trace files, or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell), e.g.
    /// `memshim completions bash > ~/.local/share/bash-completion/completions/memshim`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `memshim man | man -l -`.
    Man,
}

/// Report formats.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// For a terminal.
    Text,
    /// The documented `memshim.report/2` schema.
    Json,
    /// To paste into a bug report.
    Markdown,
    /// One self-contained page with plots (use with -o report.html).
    Html,
}

/// Formats of `diff`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffFormat {
    /// For a terminal.
    Text,
    /// The `memshim.diff/1` schema.
    Json,
    /// To paste into a pull request.
    Markdown,
}

/// What collapsed stacks are weighted by.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollapsedBy {
    /// Bytes still live at the end.
    Leaked,
    /// Bytes allocated over the run.
    Allocated,
    /// Bytes live when the host heap peaked (host memory only).
    Peak,
}

/// Which memory an export covers.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// The host heap.
    Host,
    /// CUDA device memory.
    Device,
    /// Anonymous mappings.
    Mmap,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_keeps_the_commands_own_flags() {
        let cli =
            Cli::try_parse_from(["memshim", "run", "-o", "d", "--", "prog", "-o", "x"]).unwrap();
        match cli.command {
            Command::Run {
                output, command, ..
            } => {
                assert_eq!(output, Some(PathBuf::from("d")));
                assert_eq!(command, ["prog", "-o", "x"]);
            }
            other => panic!("parsed as {other:?}"),
        }
    }
}
