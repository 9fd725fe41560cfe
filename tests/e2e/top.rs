//! `memshim top` in a real terminal: tmux (on a private socket, so no user's server is touched)
//! runs it at a fixed size against a program `memshim run` is tracing; the test reads the screen
//! until the program's exact bytes and sites are on it, types `q`, and checks that top has ended
//! and the program goes on to end with its own status.
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// How long the screen may take to show what the test waits for (a replay is milliseconds; a
/// loaded machine running the suite in parallel is slow).
const DEADLINE: Duration = Duration::from_secs(60);

/// A tmux server of this test's own, killed when the test ends however it ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts a detached session of 120 x 40 running `command` through the shell.
    fn start(name: &str, command: &str, cwd: &Path) -> Tmux {
        let tmux = Tmux {
            socket: format!("memshim-e2e-{name}-{}", std::process::id()),
        };
        let mut cmd = tmux.cmd();
        cmd.args(["new-session", "-d", "-x", "120", "-y", "40", "-s", "top"])
            .arg(command)
            .current_dir(cwd);
        hermetic(&mut cmd);
        let out = cmd
            .output()
            .expect("tmux runs (.ci/run installs it with the other test tools)");
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    /// The screen as text, one string per row.
    fn screen(&self) -> Vec<String> {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "top"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// Reads the screen until `done` holds for it; the last screen on the deadline's failure.
    fn wait_for(&self, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let start = Instant::now();
        loop {
            let rows = self.screen();
            if done(&rows) {
                return rows;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "the screen never showed {what}:\n{}",
                rows.join("\n")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &str) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", "top", keys])
            .status()
            .expect("tmux send-keys");
        assert!(ok.success(), "tmux send-keys {keys}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// `memshim run` tracing `prog` in `cwd`, read up to the program's ready line.
pub fn start_traced(
    dir: &TestDir,
    prog: &Path,
    ready: &str,
) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut cmd = memshim_cmd();
    cmd.arg("run")
        .arg("--quiet")
        .arg("-o")
        .arg(dir.traces())
        .arg("--")
        .arg(prog)
        .current_dir(&dir.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    hermetic(&mut cmd);
    let mut child = cmd.spawn().expect("memshim run starts");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the program's first line");
    assert_eq!(line.trim_end(), ready);
    (child, out)
}

/// Waits for `path` to appear (what the shell writes when top has ended) and returns its text.
fn wait_for_file(path: &PathBuf, screen: impl Fn() -> Vec<String>) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.ends_with('\n') {
                return s;
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "memshim top did not end after q:\n{}",
            screen().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn top_shows_a_running_programs_sites_then_q_quits_and_the_program_goes_on() {
    let dir = TestDir::new("top_running_program");
    let prog = dir.compile("top_target.c");
    let (mut run, mut stdout) = start_traced(&dir, &prog, "top_target: ready");
    // By the pid of `memshim run`: top finds the trace its child holds open.
    let status = dir.path("top.status");
    let command = format!(
        "'{}' top {}; echo $? > '{}'",
        artifacts().memshim.display(),
        run.id(),
        status.display()
    );
    let tmux = Tmux::start("top", &command, &dir.root);
    let big = "  heap               3,000,000    2.9 MiB        3  keep_big (top_target.c:18)";
    let small = "  heap                  40,960   40.0 KiB       10  keep_small (top_target.c:19)";
    // Until both rows are whole: a reading may fall between the program's first allocations.
    let rows = tmux.wait_for("the two sites with their exact bytes", |rows| {
        rows.iter().any(|r| r == big) && rows.iter().any(|r| r == small)
    });
    let traces = trace_files(&dir.traces());
    assert_eq!(traces.len(), 1, "{traces:?}");
    let name = traces[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let pid = name.split('.').nth(1).expect("exe.pid.mshim").to_string();
    assert_eq!(
        rows[0],
        format!("memshim top: top_target  (pid {pid})"),
        "{}",
        rows.join("\n")
    );
    assert!(
        rows[1].starts_with("running, traced for ")
            && rows[1].ends_with(&format!("; trace {}", traces[0].display())),
        "{}",
        rows.join("\n")
    );
    let row = |text: &str| {
        rows.iter()
            .find(|r| r.contains(text))
            .unwrap_or_else(|| panic!("no row with {text}:\n{}", rows.join("\n")))
            .as_str()
    };
    let sites: Vec<&str> = rows
        .iter()
        .skip_while(|r| !r.starts_with("live now by site"))
        .skip(1)
        .take(3)
        .map(String::as_str)
        .collect();
    assert_eq!(
        sites[..2],
        [big, small],
        "largest first:\n{}",
        rows.join("\n")
    );
    // The C library's buffer for the piped stdout, as the report names it.
    assert_eq!(
        row("[the C library]"),
        "  heap                   4,096    4.0 KiB        1  main (top_target.c:26) [the C library]"
    );
    assert_eq!(
        rows[4],
        "  heap             2.9 MiB (14 blocks)         2.9 MiB",
        "{}",
        rows.join("\n")
    );
    assert!(
        rows[39].starts_with("q quits; the program goes on.  read "),
        "{}",
        rows.join("\n")
    );

    tmux.keys("q");
    let said = wait_for_file(&status, || tmux.screen());
    assert_eq!(said, "0\n", "memshim top's exit status");
    assert!(
        run.try_wait().expect("wait on memshim run").is_none(),
        "the program goes on after top quits"
    );
    std::fs::write(dir.path("stop"), b"").expect("create the stop file");
    let mut rest = String::new();
    stdout
        .read_to_string(&mut rest)
        .expect("the program's stdout");
    let ended = run.wait().expect("memshim run ends");
    assert_eq!(rest, "top_target: done\n");
    assert_eq!(ended.code(), Some(7), "the program's own status");
}
