//! The command line's generated documentation: completion scripts a shell loads, a manual page with
//! a section per subcommand.
use std::process::Command;

use crate::util::*;

#[test]
fn bash_loads_the_completion_script_and_completes_subcommands() {
    let dir = TestDir::new("cli_completions");
    let script = dir.path("memshim.bash");
    let out = run_ok(memshim_cmd().args(["completions", "bash"]));
    std::fs::write(&script, &out.stdout).unwrap();
    // Complete `memshim r` as bash would, from the loaded script's own function.
    let probe = format!(
        "source {}; COMP_WORDS=(memshim r); COMP_CWORD=1; COMP_LINE='memshim r'; COMP_POINT=9; \
         _memshim memshim r memshim; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = run_ok(Command::new("bash").args(["-c", &probe]));
    let words: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
    assert!(
        words.contains(&"run".to_string()) && words.contains(&"report".to_string()),
        "{words:?}"
    );
}

#[test]
fn the_manual_has_a_page_for_every_subcommand() {
    let out = run_ok(memshim_cmd().arg("man"));
    let roff = out.stdout_str();
    for page in [
        "memshim",
        "memshim-run",
        "memshim-attach",
        "memshim-top",
        "memshim-snapshot",
        "memshim-report",
        "memshim-export",
        "memshim-diff",
        "memshim-info",
        "memshim-bench",
    ] {
        assert!(roff.contains(&format!(".TH {page} ")), "no page {page}");
    }
    assert!(
        roff.contains("fail\\-on"),
        "the run page documents --fail-on"
    );
}
