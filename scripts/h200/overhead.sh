#!/usr/bin/env bash
# Per-call cost of the CUDA interception and the step-time cost of full host stacks, on the GPU
# machine. Run from the repository root with target/release/{memshim,libmemshim.so}; if the system has
# no libunwind.so.8, put one in .devlib/ (carried) to use the shim's fast unwinder.
set -u
. scripts/h200/env.sh
echo "libunwind: $(ldconfig -p | grep -c 'libunwind.so.8 ') system copies; LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
w=/tmp/memshim-overhead && rm -rf "$w" && mkdir -p "$w"
nvcc -g -O2 -o "$w/copy_overhead" examples/cuda/copy_overhead.cu
echo "== copy_overhead: bare / full / CUDA only / CUDA only with libgcc unwinder"
"$w/copy_overhead"
"$M" run -q -o "$w/a" -- "$w/copy_overhead"
MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 "$M" run -q -o "$w/b" -- "$w/copy_overhead"
MEMSHIM_UNWIND=gcc MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 "$M" run -q -o "$w/c" -- "$w/copy_overhead"
# Each model: bare / full stacks with Python frames / full stacks, native only / sampled host stacks
# (512K) with CUDA in full.
for model in transformer mlp; do
    echo "== $model step: bare / full / full MEMSHIM_PYTHON=0 / sampled 512K"
    python3 examples/python/torch_train_overhead.py 30 $model 2>&1 | tail -1
    "$M" run -q -o "$w/d$model" -- python3 examples/python/torch_train_overhead.py 30 $model 2>&1 | tail -1
    MEMSHIM_PYTHON=0 "$M" run -q -o "$w/n$model" -- python3 examples/python/torch_train_overhead.py 30 $model 2>&1 | tail -1
    MEMSHIM_SAMPLE_BYTES=512K "$M" run -q -o "$w/e$model" -- python3 examples/python/torch_train_overhead.py 30 $model 2>&1 | tail -1
done
