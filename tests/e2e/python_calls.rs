//! Python frames through CPython's own call paths: an `__init__` reached through the specialised
//! call (3.13 and 3.14 push a shim frame without a line, which must not show) and a generator. Every
//! interpreter that `interpreters()` finds must give the same stacks.
use std::path::Path;

use crate::python::{interpreters, python_frames, run_python};
use crate::report::{dump, process_by_exe, report_json, sites};
use crate::util::TestDir;

#[test]
fn a_specialised_init_and_a_generator_show_the_same_frames_on_every_cpython() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/python_fakes/init_and_generators.py");
    let at = |f: &str, line| (f.to_string(), "init_and_generators.py".to_string(), line);
    for python in interpreters() {
        let name = python.file_name().unwrap().to_string_lossy().into_owned();
        let dir = TestDir::new(&format!("python_calls_{name}"));
        run_python(
            &dir,
            &dir.traces(),
            &[],
            &python,
            &[script.as_os_str()],
            &[],
        );
        let report = report_json(&dir.traces());
        let p = process_by_exe(&report, &name);
        // The site whose innermost Python frame is `func` (the bytearrays and the list's growth
        // both lie there).
        let site = |func: &str| {
            let found: Vec<_> = sites(p, "host")
                .iter()
                .map(python_frames)
                .filter(|py| {
                    py.first()
                        .is_some_and(|f| f.0.ends_with(func) && f.1 == "init_and_generators.py")
                })
                .collect();
            assert_eq!(found.len(), 1, "{name}: one site in {func}:\n{}", dump(p));
            found[0].clone()
        };
        // Qualified names since 3.11.
        let init = site("__init__");
        let init_name = if init[0].0 == "Holder.__init__" {
            "Holder.__init__"
        } else {
            "__init__"
        };
        assert_eq!(
            init,
            vec![
                at(init_name, 11),
                at("build", 16),
                at("main", 26),
                at("<module>", 31)
            ],
            "{name}"
        );
        assert_eq!(
            site("produce"),
            vec![at("produce", 21), at("main", 27), at("<module>", 31)],
            "{name}"
        );
    }
}
