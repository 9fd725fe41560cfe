//! The probes' thread (`memshim-sampler`) and what it reads: every 100 ms the C library's heap
//! statistics and the resident set (`heap_use`), about once a second the performance counters'
//! running totals (`counters`), on a machine with several NUMA nodes the CPU each thread runs on
//! (`thread_cpus`), the GPUs' NVML readings (`nvml`), and whether the module map changed (dlopen,
//! dlclose; `modules`), sending the new map (looking for a CPython loaded late, as an embedding
//! program does). It is the only place, besides start and exit, that walks the loader's list, so the
//! writer never has to. It reads; it never records a program's call (that is `record`'s).
pub(crate) mod counters;
pub(crate) mod heap_use;
pub(crate) mod modules;
pub(crate) mod nvml;
pub(crate) mod perf_fd;
pub(crate) mod thread_cpus;
pub(crate) mod topology;
use std::io;
use std::time::Duration;

use memshim_trace::Record;

use crate::record::msg::Msg;
use crate::sys;
use crate::sys::queue::Sender;
use crate::sys::threads::send_unparked;

/// The sampler's period.
pub const PERIOD: Duration = Duration::from_millis(100);

/// What the sampler reads and how often, for the process `pid`. Made on the thread starting the
/// trace; ticked by its own thread (see [`Sampler::spawn`]), or on a program thread while the
/// process has no helper thread yet (see `on_demand`).
pub struct Sampler {
    tx: Sender,
    exe: String,
    pid: u32,
    seen: (u64, u64),
    heap: Pace,
    counters: Pace,
    threads: Option<(crate::probes::thread_cpus::ThreadCpus, Pace)>,
    gpus: GpuSampling,
    poller: bool,
    cupti_flush: Pace,
}

impl Sampler {
    pub fn new(tx: Sender, exe: String, pid: u32) -> Sampler {
        // Read here, on the thread starting the trace (before the program's main runs): later, on
        // another thread, its opens would race the program's first ones for the lowest free numbers.
        let cpus = crate::probes::thread_cpus::ThreadCpus::new();
        Sampler {
            tx,
            exe,
            pid,
            seen: modules::counters(),
            heap: Pace::new(1, HEAP_SLOW),
            // The first reading at the first period, so a short run still shows how the counters grew.
            counters: Pace::new(COUNTER_TICKS, COUNTER_SLOW).due_first(),
            threads: cpus.map(|t| (t, Pace::new(1, THREADS_SLOW))),
            gpus: GpuSampling::default(),
            poller: false,
            // CUPTI hands back its activity buffers when asked: once a second.
            cupti_flush: Pace::new(10, Duration::from_secs(1)),
        }
    }

    /// Starts the sampler thread.
    pub fn spawn(mut self) -> io::Result<()> {
        crate::sys::threads::spawn(c"memshim-sampler", move || loop {
            std::thread::sleep(PERIOD);
            if sys::getpid() != self.pid {
                return;
            }
            if crate::sys::threads::program_gone() {
                crate::sys::threads::exit_as_last_thread();
            }
            if !self.tick() {
                return;
            }
        })
    }

    /// One period's readings, sent; false once the writer is gone.
    pub fn tick(&mut self) -> bool {
        let tx = &self.tx;
        if !self.poller && crate::cuda::record::used() && crate::channel::cuda_enabled() {
            self.poller = true;
            if let Err(e) = crate::cuda::poller::spawn(tx.clone(), self.pid) {
                crate::channel::warn(&format!(
                    "cannot start the copy-timing thread ({e}): async copies are not timed on the GPU"
                ));
            }
            if let Some(c) = crate::channel::config().filter(|c| c.cupti) {
                crate::cuda::cupti::start(c.cupti_lib.as_deref());
            }
        }
        if self.cupti_flush.due() {
            crate::cuda::cupti::flush(false);
        }
        if let Some(record) = self.gpus.tick(self.pid) {
            if !send_unparked(tx, Msg::Record(record)) {
                return false;
            }
        }
        if self.heap.due() {
            let stats = self.heap.timed(crate::probes::heap_use::sample);
            if !send_unparked(tx, Msg::Record(Record::HeapStats(Box::new(stats)))) {
                return false;
            }
            if let Some(r) = crate::record::sampling::totals_record() {
                if !send_unparked(tx, Msg::Record(r)) {
                    return false;
                }
            }
        }
        if self.counters.due() {
            let values = self.counters.timed(crate::probes::counters::sample);
            if let Some(v) = values {
                if !send_unparked(tx, Msg::Record(Record::CounterSample(v))) {
                    return false;
                }
            }
        }
        if let Some((cpus, pace)) = self.threads.as_mut() {
            if pace.due() {
                let sample = pace.timed(|| cpus.sample());
                if !sample.is_empty() && !send_unparked(tx, Msg::Record(Record::ThreadCpus(sample)))
                {
                    return false;
                }
            }
        }
        let now = modules::counters();
        // The scan opens files for a moment (see `owned_fds::probe`); tried again later.
        let scanned = (now != self.seen)
            .then(|| crate::sys::owned_fds::probe(|| modules::scan(&self.exe)))
            .flatten();
        if let Some(mods) = scanned {
            self.seen = now;
            let enabled = crate::channel::config().is_some_and(|c| c.python);
            let python = crate::python::detect(&mods, enabled);
            if !send_unparked(tx, Msg::Modules(mods)) {
                return false;
            }
            if let Some(p) = python {
                if !send_unparked(tx, Msg::Record(Record::Python(p))) {
                    return false;
                }
            }
        }
        true
    }
}

/// NVML, started once the process used CUDA; read every `every` periods, less often when slow.
struct GpuSampling {
    nvml: Option<crate::probes::nvml::Nvml>,
    tried: bool,
    described: bool,
    pace: Pace,
}

impl Default for GpuSampling {
    fn default() -> Self {
        GpuSampling {
            nvml: None,
            tried: false,
            described: false,
            pace: Pace::new(2, GPU_SLOW).at_most(GPU_MAX_TICKS),
        }
    }
}

/// Counters are read every this many periods (one read syscall per counter: about 10 µs in all).
const COUNTER_TICKS: u32 = 10;
/// A counter reading slower than this halves the rate.
const COUNTER_SLOW: Duration = Duration::from_millis(1);
/// A thread-CPU sample slower than this (many threads: two small /proc reads each) halves the rate.
const THREADS_SLOW: Duration = Duration::from_millis(2);

/// A GPU reading that takes longer than this halves the reading rate. NVML's PCIe throughput is
/// measured over 20 ms inside the call, so a reading takes that long by design: the threshold sits
/// well above it (at 20 ms every reading halved the rate, and a 15 s job on an H200 got 4 readings).
const GPU_SLOW: Duration = Duration::from_millis(80);
/// The GPU is read at least once a second however slow its readings are: it runs on the sampler's
/// own thread, and the utilisation findings need readings over the stretch they judge.
const GPU_MAX_TICKS: u32 = 10;

impl GpuSampling {
    /// What to record this period, if anything.
    fn tick(&mut self, pid: u32) -> Option<Record> {
        if !self.tried {
            if !crate::cuda::record::used() || !crate::channel::cuda_enabled() {
                return None;
            }
            self.tried = true;
            self.nvml = crate::probes::nvml::Nvml::start(pid);
        }
        let nvml = self.nvml.as_ref()?;
        if !self.described {
            self.described = true;
            return Some(Record::Gpus(nvml.describe()));
        }
        if !self.pace.due() {
            return None;
        }
        Some(Record::GpuSamples(self.pace.timed(|| nvml.sample())))
    }
}

/// How often a sample is taken, in sampler periods: when one takes longer than `slow`, the interval
/// doubles (up to every `MAX_TICKS` periods). glibc's `mallinfo2` walks every free chunk while
/// holding each arena's lock, so on a large fragmented heap it can hold up the program's own
/// allocations; an NVML reading can block for tens of milliseconds.
#[derive(Debug)]
struct Pace {
    every: u32,
    tick: u32,
    slow: Duration,
    max: u32,
}

/// A heap-statistics sample slower than this halves the heap sampling rate.
const HEAP_SLOW: Duration = Duration::from_micros(500);
const MAX_TICKS: u32 = 100;

impl Pace {
    fn new(every: u32, slow: Duration) -> Pace {
        Pace {
            every,
            tick: 0,
            slow,
            max: MAX_TICKS,
        }
    }

    /// The same pace, never sparser than every `ticks` periods.
    fn at_most(mut self, ticks: u32) -> Pace {
        self.max = ticks;
        self
    }

    /// The same pace, due at the first period already.
    fn due_first(mut self) -> Pace {
        self.tick = self.every.saturating_sub(1);
        self
    }

    fn due(&mut self) -> bool {
        self.tick += 1;
        if self.tick >= self.every {
            self.tick = 0;
            true
        } else {
            false
        }
    }

    /// Runs one reading, slowing the pace when it took long.
    fn timed<T>(&mut self, read: impl FnOnce() -> T) -> T {
        let start = std::time::Instant::now();
        let out = read();
        self.took(start.elapsed());
        out
    }

    fn took(&mut self, d: Duration) {
        if d > self.slow {
            self.every = (self.every * 2).min(self.max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_samples_back_off_to_a_limit() {
        let mut p = Pace::new(1, HEAP_SLOW);
        assert!(p.due() && p.due());
        for _ in 0..20 {
            p.took(Duration::from_millis(5));
        }
        assert_eq!(p.every, MAX_TICKS);
        let due: usize = (0..1000).filter(|_| p.due()).count();
        assert_eq!(due, 10);
        p.took(Duration::from_micros(10));
        assert_eq!(p.every, MAX_TICKS, "fast samples do not speed it up again");
    }

    #[test]
    fn each_pace_has_its_own_threshold() {
        let mut gpu = Pace::new(2, GPU_SLOW);
        gpu.took(Duration::from_millis(25));
        assert_eq!(gpu.every, 2, "25 ms is an NVML reading's usual time");
        gpu.took(Duration::from_millis(100));
        assert_eq!(gpu.every, 4);
        assert!(!gpu.due() && !gpu.due() && !gpu.due() && gpu.due());
        let mut gpu = Pace::new(2, GPU_SLOW).at_most(GPU_MAX_TICKS);
        for _ in 0..10 {
            gpu.took(Duration::from_millis(500));
        }
        assert_eq!(gpu.every, GPU_MAX_TICKS, "read at least once a second");
    }

    #[test]
    fn a_pace_can_be_due_at_once() {
        let mut p = Pace::new(10, COUNTER_SLOW).due_first();
        assert!(p.due());
        assert_eq!((0..10).filter(|_| p.due()).count(), 1);
    }
}
