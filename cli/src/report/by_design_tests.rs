use super::*;

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

fn frame(function: &str, module: &str) -> FrameOut {
    FrameOut {
        kind: "native",
        function: (!function.is_empty()).then(|| function.into()),
        file: None,
        line: None,
        module: Some(module.into()),
        address: "0x1".into(),
        main_thread: false,
        offset: None,
        hidden: None,
        short_file: None,
    }
}

fn stack(frames: &[(&str, &str)]) -> Vec<FrameOut> {
    frames.iter().map(|(f, m)| frame(f, m)).collect()
}

#[test]
fn the_c_librarys_own_buffers_are_its_own() {
    let stdout = stack(&[
        ("malloc", LIBC),
        ("__GI__IO_file_doallocate", LIBC),
        ("__GI__IO_doallocbuf", LIBC),
        ("_IO_new_file_xsputn", LIBC),
        ("puts", LIBC),
        ("main", "/tmp/leaky"),
    ]);
    assert_eq!(owner(&stdout), Some("c_library"));
    let locale = stack(&[
        ("malloc", LIBC),
        ("__strdup", LIBC),
        ("setlocale", LIBC),
        ("main", "/tmp/p"),
    ]);
    assert_eq!(owner(&locale), Some("c_library"));
    let loader = stack(&[
        ("calloc", LIBC),
        ("_dl_new_object", "/lib64/ld-linux-x86-64.so.2"),
        ("_dl_map_object", "/lib64/ld-linux-x86-64.so.2"),
        ("dlopen", LIBC),
        ("main", "/tmp/p"),
    ]);
    assert_eq!(owner(&loader), Some("c_library"));
    // Static: the C library inside the executable, known by its names.
    let static_stdio = stack(&[
        ("malloc", "/tmp/s"),
        ("_IO_file_doallocate", "/tmp/s"),
        ("main", "/tmp/s"),
    ]);
    assert_eq!(owner(&static_stdio), Some("c_library"));
}

#[test]
fn the_programs_calls_into_the_c_library_stay_the_programs() {
    let strdup = stack(&[
        ("malloc", LIBC),
        ("__strdup", LIBC),
        ("leak_strdup", "/tmp/leaky"),
        ("main", "/tmp/leaky"),
        ("__libc_start_call_main", LIBC),
    ]);
    assert_eq!(owner(&strdup), None);
    // A constructor of the program run by the loader is the program's.
    let ctor = stack(&[
        ("malloc", LIBC),
        ("init_table", "/tmp/libmine.so"),
        ("call_init", "/lib64/ld-linux-x86-64.so.2"),
        ("_dl_init", "/lib64/ld-linux-x86-64.so.2"),
    ]);
    assert_eq!(owner(&ctor), None);
    assert_eq!(owner(&[]), None);
}

#[test]
fn the_go_runtimes_own_mappings_but_not_a_cgo_programs_c_code() {
    let arena = stack(&[("x_cgo_mmap", "/tmp/gocgo"), ("", "/tmp/gocgo")]);
    assert_eq!(owner(&arena), Some("go_runtime"));
    let user = stack(&[
        ("malloc", LIBC),
        ("leak", "/tmp/gocgo"),
        ("_cgo_abc123_Cfunc_leak", "/tmp/gocgo"),
    ]);
    assert_eq!(owner(&user), None);
}

#[test]
fn the_cxx_runtimes_pool_and_the_interpreters_start_up() {
    let pool = stack(&[
        ("malloc", LIBC),
        ("", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
        ("", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
        ("call_init", "/lib64/ld-linux-x86-64.so.2"),
        ("_dl_init", "/lib64/ld-linux-x86-64.so.2"),
    ]);
    assert_eq!(owner(&pool), Some("cxx_runtime"));
    let exception = stack(&[
        ("malloc", LIBC),
        (
            "__cxa_allocate_exception",
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        ),
        ("throw_it", "/tmp/p"),
    ]);
    assert_eq!(owner(&exception), None);
    let py = stack(&[
        ("PyMem_RawMalloc", "/usr/bin/python3"),
        ("_PyImport_Init", "/usr/bin/python3"),
        ("pyinit_core", "/usr/bin/python3"),
        ("pymain_init", "/usr/bin/python3"),
        ("Py_BytesMain", "/usr/bin/python3"),
    ]);
    assert_eq!(owner(&py), Some("interpreter"));
    let script = stack(&[
        ("PyObject_Malloc", "/usr/bin/python3"),
        ("pymain_run_python", "/usr/bin/python3"),
        ("Py_BytesMain", "/usr/bin/python3"),
    ]);
    assert_eq!(owner(&script), None);
}

#[test]
fn the_rust_runtimes_set_up_but_not_the_programs_main() {
    let exe = "/tmp/app";
    let set_up = stack(&[
        ("alloc::alloc::alloc", exe),
        ("std::sys::pal::unix::stack_overflow::imp::init", exe),
        ("std::rt::init", exe),
        ("std::rt::lang_start_internal", exe),
        ("main", exe),
    ]);
    assert_eq!(owner(&set_up), Some("rust_runtime"));
    let hashed = stack(&[("malloc", LIBC), ("std::rt::init::h0123456789abcdef", exe)]);
    assert_eq!(owner(&hashed), Some("rust_runtime"));
    let program = stack(&[
        ("alloc::alloc::alloc", exe),
        ("app::load", exe),
        ("app::main", exe),
        ("std::rt::lang_start_internal", exe),
        ("main", exe),
    ]);
    assert_eq!(owner(&program), None);
    assert_eq!(owner(&stack(&[("std::rt::initialise", exe)])), None);
}
