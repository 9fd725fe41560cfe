#!/usr/bin/env bash
# The NVML findings on the GPU machine: examples/cuda/gpu_bound.cu in its three modes under memshim
# (bandwidth_bound, gpu_idle, capacity_bound). Run from the repository root with target/release
# carried:  OUT=/some/dir bash scripts/h200/gpu_bound.sh
set -u
. scripts/h200/env.sh
w=/tmp/memshim-bound && rm -rf "$w" && mkdir -p "$w"
{
    nvcc -O2 -o "$w/gpu_bound" examples/cuda/gpu_bound.cu
    for mode in bandwidth idle capacity; do
        echo "== gpu_bound $mode"
        "$M" run -q -o "$w/$mode" -- "$w/gpu_bound" "$mode"
        "$M" report "$w/$mode" | grep -E '^  NVML GPU|finding: GPU'
    done
} > "$OUT/gpu_bound.txt" 2>&1
cat "$OUT/gpu_bound.txt"
