use std::collections::BTreeSet;
use std::path::Path;

use clap::Parser;

use super::*;

/// The settings of a command line, or its error as the user sees it.
fn settings(line: &[&str]) -> Result<Settings, String> {
    let cli = crate::args::Cli::try_parse_from(line).map_err(|e| e.to_string())?;
    Settings::try_from(cli.command).map_err(|e| format!("{e:#}"))
}

fn error(line: &[&str]) -> String {
    match settings(line) {
        Ok(_) => panic!("{line:?} was accepted"),
        Err(e) => e,
    }
}

#[test]
fn a_report_window_is_checked_before_any_trace_is_read() {
    assert_eq!(
        error(&["memshim", "report", "--since=-1", "t"]),
        "--since takes seconds since each process started, 0 or more (got -1)"
    );
    assert_eq!(
        error(&["memshim", "report", "--until", "inf", "t"]),
        "--until takes seconds since each process started, 0 or more (got inf)"
    );
    assert_eq!(
        error(&["memshim", "report", "--since", "2", "--until", "1", "t"]),
        "--since 2 is after --until 1: the window would be empty"
    );
    let Ok(Settings::Report(r)) = settings(&["memshim", "report", "--since", "0.5", "t"]) else {
        panic!("a window from 0.5 s is a report's");
    };
    assert_eq!(
        (r.view.window.since_s, r.view.window.until_s),
        (Some(0.5), None)
    );
    assert_eq!(r.paths, [PathBuf::from("t")]);
}

#[test]
fn attach_takes_a_process_other_than_memshim_for_a_time_of_0_or_more() {
    assert_eq!(
        error(&["memshim", "attach", "--duration=-2", "10"]),
        "--duration -2 is not a number of seconds of 0 or more"
    );
    assert_eq!(error(&["memshim", "attach", "0"]), "0 is not a process id");
    let me = std::process::id().to_string();
    assert_eq!(
        error(&["memshim", "attach", &me]),
        "memshim cannot attach to itself"
    );
    assert!(matches!(
        settings(&["memshim", "attach", "--duration", "1.5", "10"]),
        Ok(Settings::Attach(Attach {
            pid: 10,
            duration: Some(1.5),
            ..
        }))
    ));
}

#[test]
fn top_reads_from_ten_times_a_second_to_once_an_hour() {
    assert_eq!(
        error(&["memshim", "top", "--interval", "0.01"]),
        "--interval takes seconds from 0.1 to 3600 (got 0.01)"
    );
    assert_eq!(
        error(&["memshim", "top", "--interval", "NaN"]),
        "--interval takes seconds from 0.1 to 3600 (got NaN)"
    );
    let Ok(Settings::Top(t)) = settings(&["memshim", "top", "--interval", "0.5"]) else {
        panic!("half a second is an interval");
    };
    assert_eq!(t.interval, Duration::from_millis(500));
}

#[test]
fn a_flame_graph_is_of_the_host_heap_into_an_svg_file() {
    assert_eq!(
        error(&["memshim", "export", "--flamegraph", "f.svg", "--memory", "device", "t"]),
        "the flame graph covers the host heap only; leave out --memory, or use --collapsed or --speedscope for device memory"
    );
    assert_eq!(
        error(&["memshim", "export", "--flamegraph", "t.mshim", "t"]),
        "the flame graph is an SVG file: name it with .svg (like --flamegraph heap.svg), not t.mshim"
    );
    let kind = |line: &[&str]| match settings(line) {
        Ok(Settings::Export(e)) => e.kind,
        _ => panic!("{line:?} is an export"),
    };
    assert!(matches!(
        kind(&[
            "memshim",
            "export",
            "--flamegraph",
            "f.svg",
            "--by",
            "allocated",
            "t"
        ]),
        Exported::Flamegraph {
            by: CollapsedBy::Allocated,
            ..
        }
    ));
    assert!(matches!(
        kind(&["memshim", "export", "--pprof", "--memory", "device", "t"]),
        Exported::Pprof(Memory::Device)
    ));
    assert!(matches!(
        kind(&["memshim", "export", "--perfetto", "t"]),
        Exported::Perfetto
    ));
    assert!(matches!(
        kind(&["memshim", "export", "--speedscope", "t"]),
        Exported::Speedscope(CollapsedBy::Leaked, Memory::Host)
    ));
    assert!(matches!(
        kind(&["memshim", "export", "--collapsed", "--memory", "mmap", "t"]),
        Exported::Collapsed(CollapsedBy::Leaked, Memory::Mmap)
    ));
}

#[test]
fn every_other_subcommand_takes_its_arguments_as_they_are() {
    let line = ["memshim", "run", "--sample", "64K", "--", "prog", "-x"];
    let Ok(Settings::Run(r)) = settings(&line) else {
        panic!("a run");
    };
    assert_eq!(
        (r.sample, &r.command[..]),
        (Some(65536), &["prog", "-x"].map(String::from)[..])
    );
    assert!(matches!(
        settings(&["memshim", "diff", "--min-bytes", "4K", "a", "b"]),
        Ok(Settings::Diff(Diff {
            min_bytes: 4096,
            ..
        }))
    ));
    assert!(matches!(settings(&["memshim", "man"]), Ok(Settings::Man)));
}

/// The `MEMSHIM_*` names in the table rows (`| \`MEMSHIM_X\` | ...`) of `text`.
fn table_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `MEMSHIM_"))
        .filter_map(|rest| rest.split('`').next())
        .map(|name| format!("MEMSHIM_{name}"))
        .collect()
}

/// The variables `text` reads: the names in the `var("MEMSHIM_X")` and `var_os("MEMSHIM_X")` of
/// its code (comments and tests left out).
fn names_read(text: &str) -> BTreeSet<String> {
    let code: String = text[..text.find("#[cfg(test)]").unwrap_or(text.len())]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    ["var(\"MEMSHIM_", "var_os(\"MEMSHIM_"]
        .iter()
        .flat_map(|call| code.split(call).skip(1))
        .filter_map(|rest| rest.split('"').next())
        .map(|name| format!("MEMSHIM_{name}"))
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("the source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path.to_string_lossy().ends_with("tests.rs")
        {
            out.push(std::fs::read_to_string(&path).expect("a source file"));
        }
    }
}

#[test]
fn the_settings_table_names_every_variable_the_cli_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![std::fs::read_to_string(root.join("build.rs")).expect("build.rs")];
    sources(&root.join("src"), &mut files);
    let read: BTreeSet<String> = files.iter().flat_map(|f| names_read(f)).collect();
    let docs = include_str!("../../docs/settings.md");
    let (shim, cli) = docs.split_at(docs.find("## The CLI").expect("the CLI's table"));
    let (shim, cli) = (table_names(shim), table_names(cli));
    assert!(cli.len() >= 4, "{cli:?}");
    let undocumented: Vec<&String> = read
        .iter()
        .filter(|n| !cli.contains(*n) && !shim.contains(*n))
        .collect();
    assert!(
        undocumented.is_empty(),
        "read but in neither table of docs/settings.md: {undocumented:?}"
    );
    let unread: Vec<&String> = cli.iter().filter(|n| !read.contains(*n)).collect();
    assert!(
        unread.is_empty(),
        "in the CLI's table but never read: {unread:?}"
    );
}
