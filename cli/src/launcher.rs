//! Shell-script launchers: `python3` from pyenv, a conda or asdf shim, a wrapper script is a shell
//! script that runs helpers and then execs the real program, so `memshim run` traces the shell and
//! its helpers first (about 80 processes for pyenv's `python3`). Seen before the run from the
//! script's `#!` line, and after it from the traces: the program the launcher finally became.
//! Only reads files and says what it saw; it never changes what is run.
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use memshim_trace::TraceReader;

/// Shells whose scripts are launchers.
const SHELLS: [&str; 5] = ["sh", "bash", "dash", "zsh", "ksh"];

/// The shell a script at `path` runs under (`bash` for `#!/usr/bin/env bash`), if it is one.
pub fn shell_of(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    BufReader::new(file.take(256)).read_line(&mut first).ok()?;
    let line = first.strip_prefix("#!")?.trim();
    let mut words = line.split_whitespace();
    let mut interpreter = base(words.next()?);
    if interpreter == "env" {
        interpreter = words.find(|w| !w.starts_with('-')).map(base)?;
    }
    SHELLS
        .contains(&interpreter)
        .then(|| interpreter.to_string())
}

/// The program the launcher finally ran: of the traces in `traces`, the latest-started process
/// that is not a shell, among those of pid `root` (the launcher execs it in place); None when it
/// never exec'd one.
pub fn final_program(traces: &[PathBuf], root: u32) -> Option<String> {
    let mut best: Option<(u64, String)> = None;
    for t in traces {
        let Ok(file) = std::fs::File::open(t) else {
            continue;
        };
        let Ok(reader) = TraceReader::new(std::io::BufReader::new(file)) else {
            continue;
        };
        let h = reader.header();
        if h.pid != root || SHELLS.contains(&base(&h.exe)) {
            continue;
        }
        if best.as_ref().is_none_or(|b| h.start_unix_ns > b.0) {
            best = Some((h.start_unix_ns, h.exe.clone()));
        }
    }
    best.map(|(_, exe)| exe)
}

/// What `memshim run` says on stderr after tracing the launcher `program` (a `shell` script):
/// how many traces the launcher cost, and the command that traces the real program directly.
pub fn advice(
    program: &str,
    shell: &str,
    traces: usize,
    real: Option<&str>,
    args: &[String],
) -> String {
    let mut line = format!(
        "memshim: note: {program} is a {shell} script that starts another program, so its shell and helpers were traced too ({traces} traces)"
    );
    match real {
        Some(exe) => {
            let rest: Vec<&str> = args.iter().map(String::as_str).collect();
            line.push_str(&format!(
                "; it ran {exe} in the end; to trace only that, run it directly: memshim run -- {exe}{}{}",
                if rest.is_empty() { "" } else { " " },
                rest.join(" ")
            ));
        }
        None => {
            line.push_str("; to trace only the program it starts, run that program by its own path")
        }
    }
    if is_pyenv_shim(program) {
        line.push_str(&format!(" (`pyenv which {}` names it)", base(program)));
    }
    line
}

fn is_pyenv_shim(program: &str) -> bool {
    crate::elf_kind::resolve(program).is_some_and(|p| p.to_string_lossy().contains("/shims/"))
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_scripts_are_told_from_other_scripts_and_programs() {
        let dir = std::env::temp_dir().join(format!("memshim-launcher-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let env = write("shim", "#!/usr/bin/env bash\nexec python3.11 \"$@\"\n");
        let sh = write("wrap", "#! /bin/sh -e\nexec ./prog\n");
        let py = write("tool", "#!/usr/bin/python3\nprint(1)\n");
        let bin = write("bin", "\x7fELF....");
        assert_eq!(shell_of(&env).as_deref(), Some("bash"));
        assert_eq!(shell_of(&sh).as_deref(), Some("sh"));
        assert_eq!(shell_of(&py), None);
        assert_eq!(shell_of(&bin), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_advice_names_the_real_program_and_its_arguments() {
        let real = "/opt/py/bin/python3.11";
        let args = vec!["x.py".to_string()];
        assert_eq!(
            advice("/home/u/.pyenv/shims/python3", "bash", 80, Some(real), &args),
            "memshim: note: /home/u/.pyenv/shims/python3 is a bash script that starts another program, so its shell and helpers were traced too (80 traces); it ran /opt/py/bin/python3.11 in the end; to trace only that, run it directly: memshim run -- /opt/py/bin/python3.11 x.py (`pyenv which python3` names it)"
        );
    }
}
