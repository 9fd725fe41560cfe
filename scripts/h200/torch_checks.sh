#!/usr/bin/env bash
# PyTorch programs under memshim in each allocator mode, their reports made in the background while
# the next program runs (a PyTorch report takes tens of seconds), then each report's first screen and
# the key lines of its PyTorch section. For the programs of one folder:
#   OUT=/some/dir [EX=examples/python/torch_variants] [MODES="native expandable"] [PROGS="a b"] bash scripts/h200/torch_checks.sh
set -u
. scripts/h200/env.sh
ex=${EX:-examples/python/torch_variants}
name=$(basename "$ex")
w=/tmp/memshim-checks-$name && rm -rf "$w" && mkdir -p "$w"
export PYTHONUNBUFFERED=1
for mode in ${MODES:-native expandable}; do
    if [ "$mode" = expandable ]; then
        export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    else
        unset PYTORCH_CUDA_ALLOC_CONF
    fi
    for prog in ${PROGS:-$(cd "$ex" && ls *.py | sed 's/\.py$//')}; do
        timeout "${PROG_TIMEOUT:-90}" "$M" run -q -o "$w/$mode.$prog" -- python3 "$ex/$prog.py" >"$w/$mode.$prog.out" 2>&1
        echo "status $?" >>"$w/$mode.$prog.out"
        ("$M" report "$w/$mode.$prog" >"$w/$mode.$prog.txt" 2>&1) &
    done
done
wait
{
    for f in "$w"/*.txt; do
        b=$(basename "$f" .txt)
        echo "=== $b: $(tr '\n' ' ' <"$w/$b.out")"
        sed -n '1,/^== /p' "$f" | grep -v '^== ' | head -24
        sed -n '/^pytorch allocator/,/^[a-z]/p' "$f" |
            grep -E '^pytorch|GPU [0-9]:|tensors held|^  #[0-9]|released growth|OOM on|out of memory|verdict|held #|^        [a-zA-Z_<].*py:[0-9]|a step at|by role' |
            grep -v -E '^        .*(torch/|<frozen)' | head -30
    done
} | tee "$OUT/$name.checks.txt"
