#!/usr/bin/env bash
# Where a PyTorch run under full host stacks spends its time when it does not finish: runs the MLP
# loop under this build's shim (and under OLD_SHIM, an earlier build, for comparison) with a time
# limit, and after DUMP_AFTER seconds prints every thread's stack with gdb (cuda-gdb on the GPU
# machine) and the kernel's wait channels.
#   OUT=/some/dir OLD_SHIM=.devlib/libmemshim-<commit>.so bash scripts/h200/stuck_full.sh
set -u
. scripts/h200/env.sh
LIMIT=${LIMIT:-100}
DUMP_AFTER=${DUMP_AFTER:-45}
gdb=$([ "${GDB:-1}" = 0 ] || command -v gdb || command -v cuda-gdb)
for lib in "$MEMSHIM_LIB" ${OLD_SHIM:+$PWD/$OLD_SHIM}; do
    echo "=== $lib"
    rm -rf /tmp/stuck && mkdir -p /tmp/stuck
    start=$(date +%s.%N)
    MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT=/tmp/stuck LD_PRELOAD=$lib \
        timeout "$LIMIT" python3 examples/python/torch_train_overhead.py 40 mlp >/tmp/stuck/out 2>&1 &
    pid=$!
    for _ in $(seq "$DUMP_AFTER"); do
        sleep 1
        kill -0 "$pid" 2>/dev/null || break
    done
    py=$(pgrep -P "$pid" | head -1)
    if [ -n "$py" ]; then
        echo "--- still running after ${DUMP_AFTER}s: pid $py, threads and wait channels"
        for t in /proc/"$py"/task/*; do echo "$(cat "$t/comm") $(cat "$t/wchan") $(awk '{print $3, $14, $15}' "$t/stat")"; done | sort | uniq -c | sort -rn | head -20
        ls -la /tmp/stuck
        [ -n "$gdb" ] && timeout 60 "$gdb" -p "$py" -batch -ex "thread apply all bt 16" 2>&1 | grep -E '^(Thread|#)' | grep -v "core::ops\|alloc::boxed\|unwind_safe\|panicking\|panic.rs" | head -150
    fi
    cp /tmp/stuck/*.mshim "$OUT/" 2>/dev/null
    wait "$pid"
    echo "exit $? after $(awk -v a="$(date +%s.%N)" -v b="$start" "BEGIN {print a - b}") s"
    tail -3 /tmp/stuck/out
done
