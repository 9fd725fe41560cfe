use super::*;
use crate::report::model::frame::shown;

fn native(function: &str, module: &str) -> FrameOut {
    FrameOut {
        kind: "native",
        function: (!function.is_empty()).then(|| function.into()),
        file: None,
        line: None,
        module: Some(module.into()),
        address: "0x55d0c0de1121".into(),
        main_thread: false,
        offset: Some("0x1121".into()),
        hidden: None,
        short_file: None,
    }
}

fn python(function: &str, file: &str) -> FrameOut {
    FrameOut {
        kind: "python",
        file: Some(file.into()),
        line: Some(3),
        module: None,
        offset: None,
        ..native(function, "")
    }
}

fn marks(frames: &[FrameOut]) -> Vec<Option<&'static str>> {
    frames.iter().map(|f| f.hidden).collect()
}

#[test]
fn native_start_up_frames_are_hidden_and_the_rest_kept() {
    let mut frames = vec![
        native("malloc", "/lib/x86_64-linux-gnu/libc.so.6"),
        native("leak_malloc", "/tmp/leaky"),
        native("main", "/tmp/leaky"),
        native("__libc_start_call_main", "/lib/x86_64-linux-gnu/libc.so.6"),
        native("__libc_start_main_impl", "/lib/x86_64-linux-gnu/libc.so.6"),
        native("_start", "/tmp/leaky"),
    ];
    mark(&mut frames, &FrameContext::default());
    let s = Some("startup");
    assert_eq!(marks(&frames), [None, None, None, s, s, s]);
    assert_eq!(shown(&frames).len(), 3);
    let mut all = frames.clone();
    all.iter_mut().for_each(|f| f.hidden = None);
    mark(
        &mut all,
        &FrameContext {
            all_frames: true,
            ..Default::default()
        },
    );
    assert_eq!(marks(&all), [None; 6]);
    // A thread's start-up is libc's; a program's own `clone` is not hidden.
    let mut thread = vec![
        native("worker", "/tmp/threads"),
        native("start_thread", "/lib/x86_64-linux-gnu/libc.so.6"),
        native("clone", "/tmp/threads"),
    ];
    mark(&mut thread, &FrameContext::default());
    assert_eq!(marks(&thread), [None, s, None]);
}

#[test]
fn python_stacks_lose_the_import_machinery_and_the_eval_loop() {
    let mut frames = vec![
        native("PyObject_Malloc", "/usr/bin/python3.11"),
        native("list_resize", "/usr/bin/python3.11"),
        native("", "/usr/lib/libpython3.11.so.1.0"),
        native("_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
        python("grow", "/home/u/proj/lib/grow.py"),
        python("_call_with_frames_removed", "<frozen importlib._bootstrap>"),
        python("exec_module", "<frozen importlib._bootstrap_external>"),
        python("<module>", "/home/u/proj/main.py"),
        native("PyEval_EvalCode", "/usr/bin/python3.11"),
        native("Py_BytesMain", "/usr/bin/python3.11"),
        native("_start", "/usr/bin/python3.11"),
    ];
    mark(
        &mut frames,
        &FrameContext {
            all_frames: false,
            script_dir: Some("/home/u/proj".into()),
        },
    );
    let (i, s) = (Some("interpreter"), Some("startup"));
    assert_eq!(
        marks(&frames),
        [
            None,
            None,
            i,
            i,
            None,
            Some("import"),
            Some("import"),
            None,
            i,
            i,
            s
        ]
    );
    assert_eq!(frames[4].short_file.as_deref(), Some("lib/grow.py"));
    assert_eq!(frames[7].short_file.as_deref(), Some("main.py"));
    assert_eq!(frames[5].short_file, None);
    let names: Vec<_> = shown(&frames)
        .iter()
        .map(|f| f.function.as_deref().unwrap())
        .collect();
    assert_eq!(
        names,
        ["PyObject_Malloc", "list_resize", "grow", "<module>"]
    );
}

#[test]
fn a_stack_of_nothing_but_hidden_frames_is_shown_whole() {
    let mut frames = vec![native("_start", "/tmp/x")];
    mark(&mut frames, &FrameContext::default());
    assert_eq!(shown(&frames).len(), 1);
}

#[test]
fn python_files_are_named_from_their_import_root() {
    let short = |f: &str| short_python_file(f, Some("/srv/app"));
    assert_eq!(
        short("/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py").as_deref(),
        Some("torch/nn/modules/linear.py")
    );
    assert_eq!(
        short("/usr/lib/python3/dist-packages/numpy/core/x.py").as_deref(),
        Some("numpy/core/x.py")
    );
    assert_eq!(
        short("/usr/lib/python3.11/json/decoder.py").as_deref(),
        Some("json/decoder.py")
    );
    assert_eq!(
        short("/srv/app/models/net.py").as_deref(),
        Some("models/net.py")
    );
    assert_eq!(short("/srv/application/x.py"), None);
    assert_eq!(short("<frozen runpy>"), None);
    assert_eq!(short("/opt/lib/pythonic/x.py"), None);
}

#[test]
fn the_script_directory_comes_from_the_command_line() {
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let files = ["/work/p/tools/run.py".to_string(), "<frozen os>".into()];
    assert_eq!(
        script_dir(&argv(&["python3", "-u", "tools/run.py", "x"]), files.iter()).as_deref(),
        Some("/work/p/tools")
    );
    assert_eq!(
        script_dir(&argv(&["python3", "/abs/s.py"]), files.iter()).as_deref(),
        Some("/abs")
    );
    assert_eq!(
        script_dir(&argv(&["python3", "-m", "pkg.py"]), files.iter()),
        None
    );
    assert_eq!(
        script_dir(&argv(&["python3", "gone.py"]), files.iter()),
        None
    );
}
