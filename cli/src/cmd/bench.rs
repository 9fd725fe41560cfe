//! `memshim bench`: measure this machine's ceilings and store them for reports.
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::bench::ceilings::{self, Ceilings, HostCeilings};
use crate::bench::{gpu, host};

/// Runs the subcommand. `quick` uses small buffers (seconds, less exact).
pub fn run(output: Option<PathBuf>, quick: bool) -> Result<()> {
    let path = match output {
        Some(p) => p,
        None => ceilings::default_path().context(
            "cannot find where to store the ceilings: set HOME, XDG_CACHE_HOME or MEMSHIM_CEILINGS",
        )?,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (elements, gpu_bytes, reps) = if quick {
        (1 << 21, 16 << 20, 3)
    } else {
        (1 << 25, 256 << 20, 5)
    };
    eprintln!("memshim: measuring host memory bandwidth ({threads} threads)...");
    let host = HostCeilings {
        triad_one_thread_gbps: host::triad_gbps(elements, 1, reps),
        triad_all_threads_gbps: host::triad_gbps(elements, threads, reps),
        threads,
    };
    println!(
        "host memory (STREAM triad): {:.1} GB/s on one thread, {:.1} GB/s on {threads}",
        host.triad_one_thread_gbps, host.triad_all_threads_gbps
    );
    eprintln!("memshim: measuring GPU copy bandwidth, if there is a GPU...");
    let gpus = gpu::measure(gpu_bytes, reps).context("cannot measure the GPU's copy bandwidth")?;
    if gpus.is_empty() {
        println!("GPU: none found (no libcuda.so.1 or no device); only host ceilings are stored");
    }
    for g in &gpus {
        println!(
            "GPU {} ({}): HtoD {:.1} GB/s pageable, {:.1} pinned; DtoH {:.1} pageable, {:.1} pinned; DtoD {:.1}",
            g.index, g.name, g.htod_pageable_gbps, g.htod_pinned_gbps, g.dtoh_pageable_gbps, g.dtoh_pinned_gbps, g.dtod_gbps
        );
    }
    let c = Ceilings {
        hostname: hostname(),
        measured_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        host,
        gpus,
    };
    ceilings::store(&path, &c)?;
    println!(
        "stored in {}; reports of traces from {} now compare against them",
        path.display(),
        c.hostname
    );
    Ok(())
}

/// This host's name, as the shim writes it into trace headers.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
