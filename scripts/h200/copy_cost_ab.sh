#!/usr/bin/env bash
# The shim's cost per small async copy, this build against an older one on the same machine, runs
# interleaved: bare; OLD_SHIM (a libmemshim.so of an earlier commit); this build; this build timing
# every copy on the GPU (MEMSHIM_COPY_EVENT_BYTES=1).
#   OLD_SHIM=.devlib/libmemshim-<commit>.so OUT=/some/dir bash scripts/h200/copy_cost_ab.sh
set -u
. scripts/h200/env.sh
NEW=$PWD/target/release/libmemshim.so
OLD=${OLD_SHIM:?OLD_SHIM=path to an earlier libmemshim.so}
w=/tmp/memshim-ab && rm -rf "$w" && mkdir -p "$w"
{
    nvcc -g -O2 -o "$w/copy_overhead" examples/cuda/copy_overhead.cu
    for i in 1 2 3 4; do
        echo "round $i: bare / old / new / new, every copy timed"
        "$w/copy_overhead" | grep ns_per_async
        MEMSHIM_LIB=$OLD "$M" run -q -o "$w/old$i" -- "$w/copy_overhead" | grep ns_per_async
        MEMSHIM_LIB=$NEW "$M" run -q -o "$w/new$i" -- "$w/copy_overhead" | grep ns_per_async
        MEMSHIM_LIB=$NEW MEMSHIM_COPY_EVENT_BYTES=1 "$M" run -q -o "$w/ev$i" -- "$w/copy_overhead" | grep ns_per_async
    done
    MEMSHIM_LIB=$NEW "$M" report "$w/ev1" | grep -E 'HtoD +pinned'
} > "$OUT/copy_cost_ab.txt" 2>&1
cat "$OUT/copy_cost_ab.txt"
