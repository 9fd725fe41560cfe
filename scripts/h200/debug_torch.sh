#!/usr/bin/env bash
# Narrows down a failure of PyTorch under memshim on the GPU machine: which hook family, and where.
# Run from the repository root with target/release/{memshim,libmemshim.so} present.
set -u
M=$PWD/target/release/memshim
export MEMSHIM_LIB=$PWD/target/release/libmemshim.so
py=${PYTHON:-python3}
snippet='import torch; print("imported", flush=True); x = torch.ones(1000, device="cuda"); print("sum", x.sum().item(), flush=True)'
n=0
for cfg in "MEMSHIM_CUDA=0" "MEMSHIM_HEAP=0 MEMSHIM_MMAP=0" "MEMSHIM_SYMBOLIZE=0" "MEMSHIM_STACK_DEPTH=64"; do
    n=$((n + 1))
    echo "### $cfg"
    env $cfg timeout 120 "$M" run -o "/tmp/dbg_$n" -- "$py" -X faulthandler -c "$snippet" 2>&1 | tail -25
    echo "exit ${PIPESTATUS[0]}"
    "$M" info "/tmp/dbg_$n" 2>&1 | grep -E 'end:|truncated|device_|cuda_' | head
done
echo "### cuda-gdb, CUDA hooks only"
timeout 300 cuda-gdb -batch -ex "set environment LD_PRELOAD=$MEMSHIM_LIB" \
    -ex "set environment MEMSHIM_OUTPUT=/tmp/dbg_gdb" -ex "set environment MEMSHIM_HEAP=0" \
    -ex "set environment MEMSHIM_MMAP=0" -ex run -ex bt -ex "info registers rip rsp" -ex "x/6i \$pc" \
    --args "$py" -c "$snippet" 2>&1 | grep -v '^\[New Thread\|^\[Thread\|Download' | tail -60
