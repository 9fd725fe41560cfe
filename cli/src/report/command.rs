//! How a report names a process: by what was run, not only by the executable's file name, so the
//! ten children of `git gc` read `git pack-objects`, `git repack`, ... and a Python process reads
//! `python3 train.py`. Also what `--program`/`--exclude` match a process by.

/// The program's file name (from argv[0], else the executable) and the first argument after it that
/// is not an option, cut to one line.
pub fn name(exe: &str, argv: &[String]) -> String {
    let program = argv
        .first()
        .filter(|a| !a.is_empty())
        .map_or(exe, String::as_str);
    let mut name = base(program).to_string();
    if let Some(arg) = operand(argv) {
        name.push(' ');
        name.push_str(base_if_path(arg));
    }
    crate::render::one_line(&name)
}

/// What names the run after the program: a subcommand or file right after it (`git pack-objects`,
/// `cc1 x.c`); for an interpreter, its script or module past its own options (`python3 -u x.py`,
/// `python3 -m pip`). Never an option's value (`train --epochs 3` is `train`).
fn operand(argv: &[String]) -> Option<&str> {
    let first = argv.get(1)?;
    if !first.starts_with('-') {
        return Some(first);
    }
    let program = base(argv.first()?);
    let interpreter = ["python", "pypy", "perl", "ruby", "node", "bash", "sh"]
        .iter()
        .any(|i| program.starts_with(i));
    if !interpreter {
        return None;
    }
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        if a == "-m" {
            return args.next().map(String::as_str);
        }
        if a == "-c" {
            return Some("-c");
        }
        if !a.starts_with('-') {
            return Some(a);
        }
    }
    None
}

/// True when `pattern` names the process: its executable's or argv[0]'s file name, its command
/// name (see [`name`]), or the file name of its first argument (a script).
pub fn matches(pattern: &str, exe: &str, argv: &[String], command: &str) -> bool {
    pattern == command
        || pattern == base(exe)
        || argv.first().is_some_and(|a| pattern == base(a))
        || operand(argv).is_some_and(|a| pattern == base(a))
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A script's path is named by its file name; any other argument as it was given.
fn base_if_path(arg: &str) -> &str {
    if arg.contains('/') && !arg.contains(char::is_whitespace) {
        base(arg)
    } else {
        arg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_the_program_and_its_first_operand() {
        let gc = argv(&["git", "pack-objects", "--all", "-q"]);
        assert_eq!(name("/usr/lib/git-core/git", &gc), "git pack-objects");
        let py = argv(&["/usr/bin/python3", "-u", "/srv/app/train.py", "--lr", "1"]);
        assert_eq!(name("/usr/bin/python3.11", &py), "python3 train.py");
        assert_eq!(name("/bin/true", &[]), "true");
        assert_eq!(name("/bin/ls", &argv(&["ls", "-l"])), "ls");
        let train = argv(&["./train", "--epochs", "3"]);
        assert_eq!(name("/app/train", &train), "train");
        let pip = argv(&["python3.11", "-m", "pip", "install", "x"]);
        assert_eq!(name("/usr/bin/python3.11", &pip), "python3.11 pip");
    }

    #[test]
    fn matches_by_file_name_command_or_script() {
        let py = argv(&["python3", "/srv/app/train.py"]);
        let exe = "/usr/bin/python3.11";
        for p in ["python3", "python3.11", "train.py", "python3 train.py"] {
            assert!(matches(p, exe, &py, "python3 train.py"), "{p}");
        }
        for p in ["python", "app", "train"] {
            assert!(!matches(p, exe, &py, "python3 train.py"), "{p}");
        }
    }
}
