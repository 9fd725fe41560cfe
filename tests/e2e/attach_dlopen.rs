//! `memshim attach`, then the program opens a library: what the library allocates once the program
//! has looked up its function is in the trace with its exact bytes and site, and the program ends
//! as it would have.
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::attach::Running;
use crate::report::*;
use crate::util::*;

#[test]
fn a_library_opened_after_attach_is_traced_from_its_first_call() {
    let dir = TestDir::new("attach_then_dlopen");
    let lib = dir.compile_with(
        "libleaky.c",
        "libleaky.so",
        &["-shared", "-fPIC", "-g", "-O0"],
    );
    let prog = dir.compile_with("attach_dlopen.c", "attach_dlopen", &["-g", "-O0", "-ldl"]);
    let mut cmd = Command::new(&prog);
    cmd.arg(&lib).current_dir(&dir.root);
    let mut running = Running::start(&mut cmd, "attach_dlopen: ready");

    let mut attach = memshim_cmd();
    attach
        .arg("attach")
        .arg(running.pid().to_string())
        .arg("-o")
        .arg(dir.traces())
        .stderr(Stdio::piped());
    hermetic(&mut attach);
    let mut attach = attach.spawn().expect("memshim attach starts");
    let mut said = BufReader::new(attach.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    said.read_line(&mut line)
        .expect("memshim attach's first line");
    if !line.contains("attached to process") {
        let _ = attach.wait();
        let _ = running.finish(&dir.root);
        assert!(line.contains("cannot trace process"), "{line}");
        println!("skipped: memshim may not ptrace another process here: {line}");
        return;
    }
    std::fs::write(dir.path("go"), b"").expect("create the go file");
    assert_eq!(running.next_line(), "attach_dlopen: called\n");
    // Ctrl-C detaches.
    let sent = Command::new("kill")
        .args(["-INT", &attach.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut said, &mut rest).expect("memshim attach's stderr");
    assert!(
        attach.wait().expect("memshim attach ends").success(),
        "{line}{rest}"
    );
    assert!(rest.contains("detached from process"), "{rest}");
    let (status, stdout, _) = running.finish(&dir.root);
    assert_eq!(status, Some(5));
    assert!(stdout.ends_with("attach_dlopen: done\n"), "{stdout}");

    let report = report_json(&dir.traces());
    let p = &processes(&report)[0];
    assert_eq!(p["end"], "detached", "{}", dump(p));
    let site = site_with(p, "host", "lib_leak");
    assert_eq!(bytes_count(site), (3 * 555, 3), "{}", dump(p));
    assert_eq!(functions(site)[..2], ["lib_leak", "main"]);
    assert!(
        frame(site, 0)["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("libleaky.c")),
        "{}",
        dump(p)
    );
    let notes: Vec<&str> = p["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("libraries opened after attach are redirected")),
        "{notes:?}"
    );
}
