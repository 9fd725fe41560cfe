//! Libraries: dlopen/dlclose loops, a library opened with RTLD_DEEPBIND, a C++ library whose static
//! initialisers allocate before the shim's constructor may have run, and a CUDA driver stand-in
//! whose `cuGetProcAddress` binds through the global scope.
use super::build::{build_dir, c, program, shared_lib};
use super::harness::Case;
use crate::report::*;

#[test]
fn dlopen_dlclose_loop() {
    let lib = shared_lib("libtorture_dl.c", "torture_dl");
    let case = Case::new("dlopen_loop", &c("dlopen_loop"), &[&lib]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "rounds 200\n");
    case.assert_leaks("dlopen_loop", &["dl_leak"], &[("dl_leak", 2000, 200)]);
}

/// The loader's error state is per thread and survives until `dlerror` is read: the shim's own failed
/// probes (a Python function in a process without Python) must not leave a message for the
/// program's first `dlerror()`, nor a block for its next dl call to free that the trace never saw.
#[test]
fn loader_error_state_and_a_second_namespace() {
    let case = Case::new("dl_state", &c("dl_state"), &[] as &[&str]);
    let bare = case.all();
    assert_eq!(
        bare.stdout_str(),
        "first none\nafter dlsym none\ncos 1\nfailed lookup reported 1\n"
    );
    case.assert_leaks(
        "dl_state",
        &["dl_state_leak"],
        &[("dl_state_leak", 4242, 1)],
    );
    for report in case.reports() {
        let p = process_by_exe(&report, "dl_state");
        assert_eq!(p["heap"]["unknown_frees"], 0, "{}", p["trace"]);
    }
}

#[test]
fn deepbind_library_that_allocates() {
    let lib = shared_lib("libdeepbind.c", "deepbind");
    let case = Case::new("deepbind", &c("deepbind"), &[&lib]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "deepbind ok\n");
    case.assert_leaks("deepbind", &["deep_leak"], &[("deep_leak", 4321, 1)]);
}

#[test]
fn cxx_library_with_allocating_static_initialisers() {
    shared_lib("libstatic_init.cpp", "static_init");
    let rpath = format!("-Wl,-rpath,{}", build_dir().display());
    let dir = format!("-L{}", build_dir().display());
    let prog = program(
        "static_init_main.cpp",
        "static_init_main",
        &["-g", "-O0", &dir, "-lstatic_init", &rpath],
    );
    let case = Case::new("static_init", &prog, &[] as &[&str]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "registry 100000\n");
    case.assert_leaks(
        "static_init_main",
        &["registry_init", "Registry"],
        &[("registry_init", 100000, 1)],
    );
    // In the thin sampling mode the constructor's allocations start the trace too, and are counted.
    let full = process_by_exe(&case.reports()[0], "static_init_main")["heap"].clone();
    let thin =
        Case::new("static_init_thin", &prog, &[] as &[&str]).env("MEMSHIM_SAMPLE_BYTES", "4096");
    thin.all();
    for report in thin.reports() {
        let h = &process_by_exe(&report, "static_init_main")["heap"];
        assert_eq!(h["totals_from"], "counts");
        for key in ["allocations", "allocated_bytes", "live_count"] {
            assert_eq!(h[key], full[key], "heap.{key}: {h}");
        }
    }
}

#[test]
fn cuda_driver_that_binds_its_own_symbols_through_the_global_scope() {
    program(
        "libcuda_global.c",
        "cuda_global_driver/libcuda.so.1",
        &["-shared", "-fPIC", "-g", "-O0", "-ldl"],
    );
    let case = Case::new("cuda_global", &c("cuda_global"), &[] as &[&str])
        .env("LD_LIBRARY_PATH", build_dir().join("cuda_global_driver"));
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "init 0\nalloc 0 0 0\npair 0 0\ndone\n");
    for report in case.reports() {
        let p = process_by_exe(&report, "cuda_global");
        assert_eq!(
            user_summary(p, "device", &["leak_device", "alloc_and_free"]),
            expected(&[("leak_device", 3145728, 3)]),
            "{}",
            p["leaks"]["device"]
        );
    }
}
