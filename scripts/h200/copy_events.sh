#!/usr/bin/env bash
# GPU-timed async copies on the GPU machine: memshim bench's ceilings, transfers.cu and the PyTorch
# data loader under memshim (pinned async bandwidth from events, against the ceiling), a CUDA graph
# capture racing the event poller, and the cost of timing a copy (copy_overhead.cu with every copy
# timed, MEMSHIM_COPY_EVENT_BYTES=1, against the default where its 4-byte copies are not).
# Run from the repository root with target/release carried:  OUT=/some/dir bash scripts/h200/copy_events.sh
set -u
. scripts/h200/env.sh
export MEMSHIM_CEILINGS=$OUT/ceilings.json
w=/tmp/memshim-events && rm -rf "$w" && mkdir -p "$w"
rows() { "$M" report "$1" | sed -n '/^transfers/,/site #1/p' | grep -v 'site #1'; }
{
    echo "== memshim bench"
    "$M" bench 2>&1 | tail -12
    nvcc -g -O2 -o "$w/transfers" examples/cuda/transfers.cu
    echo "== transfers.cu bare, then under memshim"
    "$w/transfers" | head -3
    "$M" run -q -o "$w/tr" -- "$w/transfers" | head -3
    rows "$w/tr"
    "$M" report "$w/tr" | grep -E 'finding:.*(pageable|ceiling|pinning)' | head -4
    echo "== torch_dataloader_pinned.py 300 under memshim"
    "$M" run -q -o "$w/dl" -- python3 examples/python/torch_dataloader_pinned.py 300 | tail -3
    rows "$w/dl"
    echo "== torch_graph_capture.py: bare, then under memshim (every copy timed)"
    python3 examples/python/torch_graph_capture.py 30
    MEMSHIM_COPY_EVENT_BYTES=1 "$M" run -q -o "$w/gc" -- python3 examples/python/torch_graph_capture.py 30
    echo "memshim run exit $?"
    rows "$w/gc"
    nvcc -g -O2 -o "$w/copy_overhead" examples/cuda/copy_overhead.cu
    echo "== copy_overhead: bare / memshim default (4 B copies untimed) / every copy timed, x3 interleaved"
    for i in 1 2 3; do
        "$w/copy_overhead" | grep ns_per_async
        "$M" run -q -o "$w/o$i" -- "$w/copy_overhead" | grep ns_per_async
        MEMSHIM_COPY_EVENT_BYTES=1 "$M" run -q -o "$w/e$i" -- "$w/copy_overhead" | grep ns_per_async
    done
    rows "$w/e1"
} > "$OUT/copy_events.txt" 2>&1
cat "$OUT/copy_events.txt"
