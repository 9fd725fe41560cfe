#!/usr/bin/env bash
# Where the step time goes with Python frames on: the transformer and MLP steps with full host stacks,
# Python frames on and off, and each trace's event counts (allocations, distinct stacks, code objects).
# Run from the repository root with target/release carried (and .devlib for libunwind).
set -u
. scripts/h200/env.sh
w=/tmp/memshim-pycost && rm -rf "$w" && mkdir -p "$w"
for model in ${MODELS:-transformer mlp}; do
    echo "== $model: bare"
    python3 examples/python/torch_train_overhead.py 30 $model 2>&1 | tail -1
    for py in 0 1; do
        echo "== $model: full stacks, MEMSHIM_PYTHON=$py"
        MEMSHIM_PYTHON=$py "$M" run -q -o "$w/$model$py" -- python3 examples/python/torch_train_overhead.py 30 $model 2>&1 | tail -1
        "$M" info "$w/$model$py"/*.mshim | grep -E '^  (alloc|stack|py_code|py_string|copy|device_alloc) '
    done
done
