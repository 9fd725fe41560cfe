//! Training steps found by themselves and memory by role, against PyTorch's allocator stand-in
//! driven by tests/cuda/python/torch_steps_standin.py (its frames in fake torch modules placed
//! where PyTorch's are).
use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::python::python_frames;
use crate::torch::run_script;
use crate::util::memshim;

const MIB: u64 = 1 << 20;

fn roles(v: &Value) -> [u64; 7] {
    let f = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    [
        f("parameters"),
        f("gradients"),
        f("optimizer_state"),
        f("activations"),
        f("data"),
        f("workspaces"),
        f("other"),
    ]
}

#[test]
fn torch_steps_are_found_by_the_loop_with_their_roles_and_growth_a_step() {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda/python/fake_torch");
    let fake = fake.to_string_lossy().into_owned();
    let (stdout, p, exact, dir) = run_script(
        "torch_steps_standin",
        "torch_steps_standin.py",
        "torch",
        &[("FAKE_TORCH", &fake)],
    );
    assert!(stdout.contains("ok"), "{stdout}");
    let t = &p["torch"];
    let s = &t["steps"];
    assert_eq!(s["found_by"], "loop", "{s}");
    let steps = s["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 8, "{s}");
    for (i, st) in steps.iter().enumerate() {
        let kept_before = (i as u64).saturating_sub(2);
        assert_eq!(st["index"], i as u64 + 1);
        // The first step peaks in AdamW's step (its state and temporary), the others in backward
        // (the activations not yet freed, the state kept from the first step).
        let (peak, expected) = if i == 0 {
            (18, [4 * MIB, 4 * MIB, 9 * MIB, 0, MIB, 0, 0])
        } else {
            let other = 3 * kept_before * MIB;
            (
                19 + 3 * kept_before,
                [4 * MIB, 4 * MIB, 8 * MIB, 2 * MIB, MIB, 0, other],
            )
        };
        assert_eq!(st["peak_allocated_bytes"], peak * MIB, "{st}");
        assert_eq!(roles(&st["roles_at_peak"]), expected, "{st}");
        let reserved = st["peak_reserved_bytes"].as_u64().unwrap();
        assert!(
            reserved >= st["peak_allocated_bytes"].as_u64().unwrap(),
            "{st}"
        );
        // The last step ends with its last allocator event (its sleep is not seen).
        if i < 7 {
            assert!(st["duration_s"].as_f64().unwrap() >= 0.02, "{st}");
        }
        assert!(st["peak_host_bytes"].as_u64().unwrap() > 0, "{st}");
        assert_eq!(
            (st["htod_bytes"].as_u64(), st["dtoh_bytes"].as_u64()),
            (Some(0), Some(0))
        );
    }
    let ends: Vec<u64> = steps
        .iter()
        .map(|st| st["end_allocated_bytes"].as_u64().unwrap() / MIB)
        .collect();
    assert_eq!(ends, [12, 12, 15, 18, 21, 24, 27, 30]);
    // The kept outputs: 3 MiB a step from step 3 to step 8.
    let g = &s["growth"][0];
    assert_eq!(g["memory"], "device", "{s}");
    assert_eq!(g["bytes_per_step"], 3 * MIB);
    assert_eq!(
        (g["since_step"].as_u64(), g["until_step"].as_u64()),
        (Some(3), Some(8))
    );
    assert_eq!(g["bytes"], 18 * MIB);
    // Held until the interpreter's teardown freed them: growth, not growth given back.
    assert_eq!(t["growth"].as_array().map(Vec::len), Some(1), "{t}");
    assert_eq!(t["released_growth"], serde_json::json!([]), "{t}");
    // At the GPU's peak (step 8's): every role, and the cache's free space beside them.
    let d = &t["devices"][0];
    let peak = &d["peak_roles"];
    assert_eq!(
        roles(peak),
        [4 * MIB, 4 * MIB, 8 * MIB, 2 * MIB, MIB, 0, 15 * MIB],
        "{d}"
    );
    assert_eq!(d["peak_allocated_bytes"], 34 * MIB);
    if exact {
        let here = |f: &str, l| (f.to_string(), "torch_steps_standin.py".to_string(), l);
        let marker = serde_json::json!({ "frames": s["marker"] });
        assert_eq!(python_frames(&marker), vec![here("<module>", 48)]);
        assert_eq!(
            python_frames(g),
            vec![here("Kept.__init__", 36), here("<module>", 56)]
        );
    }
    let text = memshim(&[
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("text"),
        dir.traces().as_os_str(),
    ])
    .stdout_str();
    assert!(
        text.contains("  steps: 8 found by the loop at <module> ("),
        "{text}"
    );
    assert!(
        text.contains("  +3.0 MiB a step at Kept.__init__ ("),
        "{text}"
    );
    assert!(
        text.contains("by role at the peak of step 8: other 15.0 MiB, optimizer state 8.0 MiB, parameters 4.0 MiB, gradients 4.0 MiB, activations 2.0 MiB, data 1.0 MiB, cache free "),
        "{text}"
    );
}
