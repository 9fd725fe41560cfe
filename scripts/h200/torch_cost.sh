#!/usr/bin/env bash
# The cost of memshim's PyTorch allocator hooks on a training step (examples/python/torch_train_overhead.py,
# transformer and mlp), interleaved over ROUNDS rounds, as production.sh measures the shim: bare;
# PyTorch's own torch.cuda.memory._record_memory_history (RECORD_HISTORY=1); memshim in full with the
# hooks off (MEMSHIM_TORCH=0) and on; the production mode (host stacks sampled at 512K) with the hooks
# off and on. Prints each run, then the median of each row and its ratio to bare.
#   OUT=/some/dir ROUNDS=2 STEPS=40 bash scripts/h200/torch_cost.sh
set -u
. scripts/h200/env.sh
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-40}
w=/tmp/memshim-torch-cost && rm -rf "$w" && mkdir -p "$w"
raw="$OUT/torch_cost_raw.txt"
: >"$raw"
modes=(bare history full_notorch full thin_notorch thin)
mode_env() {
    case $1 in
    history) echo RECORD_HISTORY=1 ;;
    full_notorch) echo MEMSHIM_TORCH=0 ;;
    thin) echo MEMSHIM_SAMPLE_BYTES=512K ;;
    thin_notorch) echo MEMSHIM_SAMPLE_BYTES=512K MEMSHIM_TORCH=0 ;;
    esac
}
run_mode() { # mode cmd...
    local mode=$1
    shift
    case $mode in
    bare) "$@" ;;
    history) env RECORD_HISTORY=1 "$@" ;;
    *)
        rm -rf "$w/t"
        env $(mode_env "$mode") MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT="$w/t" \
            LD_PRELOAD="$MEMSHIM_LIB" "$@"
        ;;
    esac
}
for r in $(seq "$ROUNDS"); do
    for model in ${MODELS:-transformer mlp}; do
        for mode in "${modes[@]}"; do
            ms=$(run_mode "$mode" python3 examples/python/torch_train_overhead.py "$STEPS" "$model" 2>&1 | tail -1 |
                awk '{for (i = 1; i < NF; i++) if ($i == "median_step_ms") print $(i + 1)}')
            echo "$model $mode ${ms:-nan}" | tee -a "$raw"
        done
    done
done
echo "== medians of the step time in ms (ratio to bare)"
for what in ${MODELS:-transformer mlp}; do
    base=$(awk -v w=$what '$1 == w && $2 == "bare" {print $3}' "$raw" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
    for mode in "${modes[@]}"; do
        med=$(awk -v w=$what -v m=$mode '$1 == w && $2 == m {print $3}' "$raw" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
        printf "%-12s %-13s %9s  x%s\n" "$what" "$mode" "$med" "$(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.3f", a / b}')"
    done
done | tee "$OUT/torch_cost.txt"
