//! One fixture report for the renderers' snapshot tests: a process with host leaks, a truncated fork
//! child, device memory with a failure, transfers and growth.
use crate::report::model::*;

fn frame(function: &str, file: &str, line: u32) -> FrameOut {
    FrameOut {
        kind: "native",
        function: Some(function.into()),
        file: Some(format!("/src/{file}").into()),
        line: Some(line),
        module: Some("/app/train".into()),
        address: "0x401234".into(),
        main_thread: false,
        offset: None,
        hidden: None,
        short_file: None,
    }
}

/// A Python frame; `main_thread` when it was lent to a native thread.
fn py(function: &str, line: u32, main_thread: bool) -> FrameOut {
    FrameOut {
        kind: "python",
        function: Some(function.into()),
        file: Some("/src/train.py".into()),
        line: Some(line),
        module: None,
        address: "0x8000000100000010".into(),
        main_thread,
        offset: None,
        hidden: None,
        short_file: None,
    }
}

pub(crate) fn site(bytes: u64, count: u64, frames: Vec<FrameOut>) -> Site {
    Site {
        owner: "program",
        suppressed_by: None,
        bytes,
        count,
        allocations: count * 2,
        allocated_bytes: bytes * 2,
        estimated: None,
        label: None,
        frames,
    }
}

fn class(sites: Vec<Site>) -> LeakClass {
    LeakClass {
        bytes: sites.iter().map(|s| s.bytes).sum(),
        count: sites.iter().map(|s| s.count).sum(),
        sites,
        ..LeakClass::default()
    }
}

pub(crate) fn heap(peak: u64) -> HeapSummary {
    HeapSummary {
        totals_from: crate::report::counted::FROM_EVENTS,
        totals_note: None,
        allocations: 1200,
        frees: 1100,
        allocated_bytes: 3 << 20,
        peak_bytes: peak,
        peak_time_s: 0.5,
        live_bytes: 4396,
        live_count: 100,
        temporary_allocations: 40,
        unknown_frees: 0,
        peak_sites: Vec::new(),
        peak_sites_bytes: peak,
        peak_sites_time_s: 0.5,
    }
}

fn process(pid: u32, argv: &[&str]) -> Process {
    Process {
        pid,
        ppid: 1,
        exe: "/app/train".into(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        hostname: "gpu-host".into(),
        trace: format!("/traces/train.{pid}.mshim"),
        start_unix_ns: 1_700_000_000_000_000_000,
        duration_s: 2.25,
        forked: false,
        truncated: false,
        still_writing: false,
        end: Some("exit"),
        attached_after_s: None,
        end_signal: None,
        dropped_events: 0,
        missing_frames: 0,
        sampling_bytes: None,
        python: None,
        rank: None,
        role: "main".into(),
        verdict_items: 0,
        notes: Vec::new(),
        command: crate::report::command::name(
            "/app/train",
            &argv.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ),
        program_memory: ProgramMemory::default(),
        heap: heap(1 << 20),
        flame: Default::default(),
        leaks: Leaks {
            host: LeakClass::default(),
            mmap: LeakClass::default(),
            device: LeakClass::default(),
            managed: LeakClass::default(),
            pinned: LeakClass::default(),
            registered: LeakClass::default(),
        },
        growth: GrowthSection::default(),
        device: DeviceSection::default(),
        torch: Default::default(),
        transfers: TransfersSection::default(),
        timeline: Timeline::default(),
        numa: NumaSection::default(),
        counters: CountersSection::default(),
        fragmentation: FragmentationSection::default(),
    }
}

/// The fixture.
pub fn report() -> Report {
    let mut main = process(100, &["./train", "--epochs", "3"]);
    main.leaks.host = class(vec![
        site(
            4096,
            1,
            vec![
                // A frame without a symbol, shown by module and offset.
                FrameOut {
                    function: None,
                    file: None,
                    line: None,
                    module: Some("/app/libvocab.so".into()),
                    address: "0x7f3a00002f10".into(),
                    offset: Some("0x2f10".into()),
                    ..frame("", "", 0)
                },
                frame("load_vocab", "data.c", 41),
                frame("main", "train.c", 12),
                // Start-up, hidden by the renderers.
                FrameOut {
                    hidden: Some("startup"),
                    ..frame("_start", "start.S", 115)
                },
            ],
        ),
        site(
            300,
            3,
            vec![
                frame("make_batch", "data.c", 77),
                frame("main", "train.c", 20),
            ],
        ),
    ]);
    main.leaks.device = class(vec![
        site(64 << 20, 4, vec![frame("alloc_activations", "model.cu", 9)]),
        site(
            40 << 20,
            2,
            vec![
                frame("cudaMalloc", "cuda_runtime.c", 3),
                frame("_PyEval_EvalFrameDefault", "ceval.c", 100),
                py("train_step", 27, false),
                py("<module>", 39, false),
            ],
        ),
        site(
            20 << 20,
            1,
            vec![
                frame("cudaMalloc", "cuda_runtime.c", 3),
                frame("Engine::thread_main", "engine.cpp", 50),
                py("train_step", 30, true),
                py("<module>", 39, true),
            ],
        ),
    ]);
    main.fragmentation = FragmentationSection {
        samples: 22,
        peak_free_held_bytes: 3 << 20,
        peak_free_held_time_s: 1.75,
        peak_free_held_ratio: 0.25,
        peak_arena_bytes: 12 << 20,
        peak_rss_bytes: 900 << 20,
        size_classes: vec![SizeClassOut {
            min_bytes: 513,
            max_bytes: 1024,
            hole_bytes: 2 << 20,
            holes: 2100,
            common_size: 1000,
        }],
        findings: Vec::new(),
    };
    main.counters.values = vec![
        CounterOut {
            name: "page_faults_minor".into(),
            value: Some(4321),
            error: None,
        },
        CounterOut {
            name: "cache_misses".into(),
            value: None,
            error: Some("this machine does not expose the counter".into()),
        },
    ];
    main.counters.series = vec![CounterSeriesOut {
        name: "page_faults_minor".into(),
        points: vec![(1.0, 1200), (2.0, 4321)],
    }];
    main.numa.nodes = vec![NumaNodeOut {
        id: 0,
        cpus: vec![0, 1],
        distances: vec![10],
    }];
    main.python = Some(PythonOut {
        version: "3.12.3".into(),
        frames: true,
        reason: None,
    });
    main.device = DeviceSection {
        seen: true,
        allocations: 10,
        frees: 6,
        allocated_bytes: 160 << 20,
        live_bytes: 64 << 20,
        peak_bytes: 96 << 20,
        peak_time_s: 1.5,
        gpus: vec![GpuOut {
            index: 0,
            name: "NVIDIA H200".into(),
            uuid: "GPU-0e1f".into(),
            pcie_generation: 5,
            pcie_width: 16,
            numa_node: 0,
            samples: 20,
            total_bytes: 140 << 30,
            peak_used_bytes: 700 << 20,
            peak_process_bytes: Some(600 << 20),
            peak_process_time_s: Some(1.6),
            mean_gpu_util: Some(41.5),
            mean_memory_util: Some(12.0),
            busy_memory_util: Some(20.0),
        }],
        failures: vec![FailureOut {
            api: "cuMemAlloc".into(),
            size: 32 << 20,
            result: 2,
            error: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            device: 0,
            time_s: 1.25,
            live_device_bytes: 96 << 20,
            retried_after_freeing: true,
            freed_before_retry: 32 << 20,
            site: None,
            frames: vec![frame("alloc_activations", "model.cu", 9)],
        }],
        findings: vec![Finding {
            kind: "out_of_memory",
            text: "1 device allocation failed with out-of-memory; retried after freeing 32.0 MiB"
                .into(),
            bytes: Some(32 << 20),
            site: Some("alloc_activations (model.cu:9)".into()),
            ..Default::default()
        }],
        ..DeviceSection::default()
    };
    main.transfers.summary = vec![TransferRow {
        direction: "HtoD",
        host_memory: "pageable",
        count: 50,
        bytes: 50 << 20,
        seconds: Some(0.25),
        gbps: Some(0.21),
        ceiling_gbps: None,
        async_count: 10,
        async_blocked_seconds: 0.125,
        gpu_timed_count: 8,
        gpu_seconds: Some(0.05),
        gpu_gbps: Some(6.71),
    }];
    main.growth.host = vec![GrowthSite {
        from_bytes: 1 << 10,
        from_time_s: 0.25,
        to_bytes: 1 << 20,
        to_time_s: 2.0,
        rate_bytes_per_s: 598_601.0,
        live_bytes: 1 << 20,
        frames: vec![
            frame("cache_result", "train.c", 55),
            frame("main", "train.c", 30),
        ],
    }];
    main.growth.released = vec![ReleasedSite {
        memory: "host",
        from_bytes: 1 << 20,
        from_time_s: 0.5,
        peak_bytes: 40 << 20,
        peak_time_s: 1.0,
        released_time_s: 1.25,
        live_bytes: 0,
        frames: vec![py("grow", 5, false), py("<module>", 11, false)],
    }];
    main.program_memory = ProgramMemory {
        bytes: (44 << 20) + (96 << 20),
        host_bytes: 44 << 20,
        heap_bytes: 41 << 20,
        mapped_bytes: 3 << 20,
        host_time_s: 1.0,
        device_bytes: 96 << 20,
        device_time_s: 1.5,
        rss_peak_bytes: Some(900 << 20),
    };
    main.heap.peak_sites = vec![site(
        40 << 20,
        40,
        vec![
            frame("PyByteArray_Resize", "bytearrayobject.c", 233),
            py("grow", 5, false),
            py("<module>", 11, false),
        ],
    )];
    let one_node = || {
        Finding {
        kind: "one_node",
        text: "this machine has one NUMA node (2 CPUs): all memory is local to every CPU, so there is no misplacement to report".into(),
        ..Default::default()
    }
    };
    main.numa.findings.push(one_node());
    let mut child = process(101, &["./train", "--worker"]);
    child.numa.findings.push(one_node());
    child.ppid = 100;
    child.forked = true;
    child.role = "fork child".into();
    child.truncated = true;
    child.end = None;
    child.dropped_events = 7;
    child.notes = vec!["the trace ends without the shim closing it".into()];
    child.leaks.host = class(vec![site(
        512,
        1,
        vec![frame("worker_loop", "worker.c", 8)],
    )]);
    let mut report = Report {
        schema: SCHEMA,
        processes: vec![main, child],
        verdict: Vec::new(),
        notes: Vec::new(),
        totals: Totals::default(),
        ranks: None,
        unreadable: vec![crate::report::model::Unreadable {
            trace: "traces/worker.4243.mshim".into(),
            why: "the trace is empty (0 bytes); the process may have been killed before the shim wrote its header".into(),
        }],
    };
    crate::report::figures::fill(&mut report);
    crate::report::verdict::fill(&mut report);
    report
}
