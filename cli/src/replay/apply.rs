//! Applying one event to the analyses: the one place that knows what each record kind means for
//! them. Never reads the file (that is the decoding thread's) and keeps no state of its own.
use memshim_trace::{Event, PyCode, Record};

use super::replayed::{
    HostBlock, LoadedModule, PyFunction, Replayed, SampledBlock, MAX_MODULES, MAX_NOTES,
    MAX_NUMA_CALLS,
};

/// Names a code object from the string table; one whose strings come later waits for the end.
pub(super) fn define_code(r: &mut Replayed, c: PyCode) {
    let text = |id: u32| r.py_strings.get(&id).cloned();
    match (text(c.name), text(c.file)) {
        (Some(name), Some(file)) => {
            r.py_codes.insert(
                c.id,
                PyFunction {
                    name,
                    file,
                    first_line: c.first_line,
                },
            );
        }
        _ if r.py_pending.len() < 1 << 20 => r.py_pending.push(c),
        _ => {}
    }
}

/// How many events ahead of the one applied the replay fetches what a later one will touch.
pub(super) const PREFETCH_AHEAD: usize = 8;

/// Starts fetching the entries of the large address maps that applying `ev` will touch, so that
/// by the time it is applied they are in the cache (see `analysis::addr_map`).
pub(super) fn prefetch(r: &Replayed, ev: &Event) {
    if let Record::Alloc(memshim_trace::Alloc { addr, .. })
    | Record::Free(memshim_trace::Free { addr, .. }) = &ev.record
    {
        r.heap.prefetch(*addr);
    }
}

/// Applies one event to the analyses.
pub(super) fn apply(r: &mut Replayed, ev: Event) {
    r.kinds.add(&ev.record);
    if ev.tid != 0 {
        r.last_t = r.last_t.max(ev.t);
    }
    match ev.record {
        Record::Alloc(a) => {
            r.heap.alloc(ev.t, ev.tid, a.addr, a.size, a.stack);
            r.program_peak
                .observe(ev.t, r.heap.live_bytes, r.mmap.live_bytes);
            r.recent_allocs.push(a.addr, ev.t);
        }
        Record::Free(f) => {
            r.heap.free(ev.t, ev.tid, f.addr, f.realloc);
        }
        Record::ReallocFailed(f) => {
            r.heap.realloc_failed(ev.tid, f.addr);
        }
        Record::Map(m) => {
            let frames = r.stacks.frames(m.stack);
            r.mmap.map(ev.t, ev.tid, &m, frames);
            r.program_peak
                .observe(ev.t, r.heap.live_bytes, r.mmap.live_bytes);
        }
        Record::Unmap(u) => r.mmap.unmap(ev.t, ev.tid, &u),
        Record::Stack(s) => r.stacks.define(&s),
        Record::StackBranch(b) => r.stacks.branch(&b),
        Record::ModuleLoad(m) => {
            // The same object loaded again at the same place while still loaded names nothing new.
            let again = r.modules.iter().rev().take(64).any(|l| {
                l.unloaded_t.is_none() && l.module.path == m.path && l.module.base == m.base
            });
            if !again && r.modules.len() >= MAX_MODULES {
                r.left_out.modules += 1;
            } else if !again {
                r.modules.push(LoadedModule {
                    module: *m,
                    unloaded_t: None,
                });
            }
        }
        Record::ModuleUnload(u) => {
            if let Some(m) = r.modules.iter_mut().rev().find(|m| {
                m.unloaded_t.is_none() && m.module.path == u.path && m.module.base == u.base
            }) {
                m.unloaded_t = Some(ev.t);
            }
        }
        Record::Symbols(syms) => {
            for s in syms {
                r.symbols.insert(s.addr, s.frames);
            }
        }
        Record::PyString(p) => {
            r.py_strings.insert(p.id, p.text);
        }
        Record::PyCode(c) => define_code(r, c),
        Record::Python(p) => r.python = Some(p),
        Record::Rank(k) => r.rank = Some(*k),
        Record::Gpus(g) => r.gpus.info = g,
        Record::GpuSamples(s) => r.gpus.sample(ev.t, &s),
        Record::Dropped(n) => r.dropped = r.dropped.max(n),
        Record::Note(n) if r.notes.len() < MAX_NOTES => r.notes.push(n.text),
        Record::Note(_) => r.left_out.notes += 1,
        Record::End(e) => {
            r.dropped = r.dropped.max(e.dropped_events);
            r.end = Some(e);
        }
        Record::DeviceAlloc(a) => {
            r.unified.alloc(ev.t, &a);
            r.device.alloc(ev.t, ev.tid, &a);
        }
        Record::DeviceFree(f) => r.device.free(ev.t, ev.tid, &f),
        Record::CudaFailure(f) => r.device.failure(ev.t, ev.tid, f),
        Record::MemInfo(m) => r.device.mem_info(&m),
        Record::ManagedHint(h) => r.device.hint(&h),
        Record::Copy(c) => r.transfers.copy(ev.t, ev.tid, &c, &r.device, &mut r.heap),
        Record::TimedCopy(c) => {
            r.transfers
                .timed_copy(ev.t, ev.tid, &c.copy, c.timer, &r.device, &mut r.heap)
        }
        Record::CopyTime(ct) => r.transfers.copy_time(&ct),
        Record::Cupti(state) => {
            r.unified.state = Some(state);
            r.unified.since = ev.t;
        }
        Record::UnifiedMemory(c) => r.unified.add(&c),
        Record::Sampling(bytes) => r.heap.sample_bytes = bytes,
        Record::Topology(nodes) => r.topology = nodes,
        Record::HeapStats(h) => r
            .fragmentation
            .sample(ev.t, &h, || (r.heap.freed_blocks(), r.heap.live_blocks())),
        Record::Counters(c) => r.counters = c,
        Record::AllocCpu(a) => {
            let at = r.recent_allocs.time_of(a.addr).unwrap_or(ev.t);
            r.alloc_cpu.insert(a.addr, (a.cpu, at));
        }
        Record::Placement(p) => {
            let at = r.alloc_cpu.remove(&p.addr);
            let kind = match r.device.classify(p.addr) {
                Some(memshim_trace::DeviceMemory::PinnedHost) => HostBlock::Pinned,
                Some(memshim_trace::DeviceMemory::Registered) => HostBlock::Registered,
                _ => HostBlock::Heap,
            };
            let cuda_stack = |k| r.device.kinds.get(&k).and_then(|h| h.block_stack(p.addr));
            let stack = match kind {
                HostBlock::Pinned => cuda_stack(memshim_trace::DeviceMemory::PinnedHost),
                HostBlock::Registered => r
                    .heap
                    .block_stack(p.addr)
                    .or_else(|| cuda_stack(memshim_trace::DeviceMemory::Registered)),
                HostBlock::Heap => r.heap.block_stack(p.addr),
            };
            if r.placements.len() < MAX_NUMA_CALLS {
                r.placements.push(SampledBlock {
                    placement: *p,
                    alloc_cpu: at.map(|a| a.0),
                    alloc_t: at.map(|a| a.1),
                    stack,
                    memory: kind,
                });
            }
        }
        Record::CounterSample(c) => r.counter_series.sample(ev.t, &c),
        Record::ThreadCpus(c) => r.threads.sample(ev.t, &c),
        // The reader turns these into frees before anyone sees them.
        Record::FreeBack(_) => {}
        Record::Usable(u) => r.heap.usable(u.addr, u.usable),
        Record::HeapTotals(h) => match r.heap_totals.as_mut() {
            Some(c) => c.reading(ev.t, h),
            None => r.heap_totals = Some(crate::analysis::heap_totals::Counted::new(ev.t, h)),
        },
        Record::Torch(e) => r.torch.event(ev.t, ev.tid, &e),
        Record::TorchOom(o) => r.torch.oom(ev.t, *o),
        Record::TorchState(s) => r.torch.state = Some(*s),
        Record::Attached(a) => r.attached = Some(*a),
        Record::AttachedCuda(a) => r.attached_cuda = Some(*a),
        Record::NumaCall(c) => {
            if r.numa_calls.len() < MAX_NUMA_CALLS {
                r.numa_calls.push((ev.t, ev.tid, *c));
            }
        }
    }
}
