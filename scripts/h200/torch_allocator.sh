#!/usr/bin/env bash
# PyTorch's caching allocator from the inside, on the H200: the examples in examples/python/torch_alloc
# run under memshim with the native allocator and with expandable segments; prints the key lines of
# each report (the PyTorch section) and keeps the JSON reports under $OUT.
#   OUT=/some/dir [MODES="native expandable"] [PROGS="clone_leak ..."] [TRACES=1] bash scripts/h200/torch_allocator.sh
# EX=examples/python/torch_variants NAME=torch_variants runs another set (all its programs unless
# PROGS names some), writing $OUT/$NAME.txt.
# TRACES=1 also packs the traces into $OUT/traces.tgz.* (15 MiB pieces) to report on elsewhere;
# REPORTS=0 leaves the reports to be made there (saves the GPU machine's time).
set -u
. scripts/h200/env.sh
ex=${EX:-examples/python/torch_alloc}
name=${NAME:-torch_allocator}
w=/tmp/memshim-$name && rm -rf "$w" && mkdir -p "$w"
export PYTHONUNBUFFERED=1
{
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
    for mode in ${MODES:-native expandable}; do
        if [ $mode = expandable ]; then
            export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
        else
            unset PYTORCH_CUDA_ALLOC_CONF
        fi
        default="clone_leak losses_kept host_growth_released oom_fragmentation oom_capacity train_steps dataloader_workers"
        [ -n "${EX:-}" ] && default=$(cd "$ex" && ls *.py | sed 's/\.py$//')
        for prog in ${PROGS:-$default}; do
            echo "=== $prog ($mode)"
            t0=$(date +%s%N)
            timeout "${PROG_TIMEOUT:-120}" "$M" run -q -o "$w/$mode.$prog" -- python3 "$ex/$prog.py" 2>&1 | tail -3
            echo "run took $((($(date +%s%N) - t0) / 1000000)) ms"
            [ "${REPORTS:-1}" = 0 ] && continue
            "$M" report "$w/$mode.$prog" >"$w/$mode.$prog.txt" 2>&1
            "$M" report --format json "$w/$mode.$prog" >"$w/$mode.$prog.json" 2>/dev/null
            sed -n '/^pytorch allocator/,/^[a-z]/p' "$w/$mode.$prog.txt" |
                grep -E '^pytorch|GPU [0-9]:|held at the peak|tensors held|^  #|released growth|growing until|OOM on|verdict|held #|outside|^        [a-zA-Z_<].*py:[0-9]|^            [a-z].*(c10|Allocator)|^  (steps|by role)|by role:|a step at|released' |
                head -60
            sed -n '/^processes/,/^$/p;/^growth/,/^[a-z]/p' "$w/$mode.$prog.txt" | grep -E 'processes|pid|worker|released|grew' | head -12
            echo "--- first screen"
            sed -n '1,/^== /p' "$w/$mode.$prog.txt" | head -30
        done
    done
    [ -n "${PROGS:-}${EX:-}" ] && exit 0
    echo "=== cudaMallocAsync backend (clone_leak)"
    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$M" run -q -o "$w/async.clone_leak" -- python3 "$ex/clone_leak.py" 2>&1 | tail -2
    "$M" report "$w/async.clone_leak" 2>&1 | grep -E '^pytorch|^device|leaked device|clone_leak.py' | head -12
} 2>&1 | tee "$OUT/$name.txt"
[ "${REPORTS:-1}" = 0 ] || tar czf "$OUT/torch_reports.tgz" -C "$w" $(cd "$w" && ls *.json *.txt)
if [ "${TRACES:-0}" = 1 ]; then
    tar czf - -C "$w" $(cd "$w" && ls -d */) | split -b 15M - "$OUT/traces.tgz."
    ls -la "$OUT"
fi
