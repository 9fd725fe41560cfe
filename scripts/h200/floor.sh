#!/usr/bin/env bash
# Where the launch-bound MLP step's fixed cost comes from: the shim loaded and recording nothing cost
# 1.29-1.39x there (BENCHMARKS.md, seventh session). Interleaved over ROUNDS rounds, median step ms of
# examples/python/torch_train_overhead.py STEPS mlp for:
#   bare; idle (benches/idle_thread.c preloaded: one idle thread, no hooks); disabled (the shim
#   loaded with MEMSHIM_DISABLE=1: its hooks pass straight through); off (heap, mappings and CUDA
#   not recorded: helper threads, the sampler and the hooks' checks); off-nopy (off, and neither
#   Python frames nor the torch layer); thin (the production mode, 512K).
# MODES picks others: thin-notorch, thin-nopy, thin-nocuda (thin without the torch layer, Python
# frames or CUDA), thin-before (thin with the shim at BEFORE_LIB, an older build, for an A/B), full
# and full-before (full stacks, this build and BEFORE_LIB's). Then, when a perf binary is carried in .perf/ (with its libraries), a profile of
# each of PERF_MODES (bare off thin), by thread, object and symbol, to $OUT/perf_<mode>.txt;
# PERF_DELAY (ms) starts each profile that late, past `import torch`, so that it holds the steps;
# PERF_CALLERS="sym ..." adds each symbol's callers (its call graphs, from the symbol out) to the profile.
#   OUT=/some/dir ROUNDS=4 STEPS=100 [MODES="..."] [PERF_MODES="..."] [PERF_DELAY=ms] [PERF_CALLERS="..."] bash scripts/h200/floor.sh
set -u
. scripts/h200/env.sh
ROUNDS=${ROUNDS:-4}
STEPS=${STEPS:-100}
w=/tmp/memshim-floor && rm -rf "$w" && mkdir -p "$w"
cc -shared -fPIC -o "$w/idle_thread.so" benches/idle_thread.c -lpthread
raw="$OUT/floor_raw.txt"
: >"$raw"
read -r -a modes <<<"${MODES:-bare idle disabled off off-nopy thin}"
mode_env() {
    case $1 in
    idle) echo LD_PRELOAD="$w/idle_thread.so" ;;
    disabled) echo MEMSHIM_DISABLE=1 LD_PRELOAD="$MEMSHIM_LIB" ;;
    off) echo MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 MEMSHIM_CUDA=0 LD_PRELOAD="$MEMSHIM_LIB" ;;
    off-nopy) echo MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 MEMSHIM_CUDA=0 MEMSHIM_PYTHON=0 MEMSHIM_TORCH=0 LD_PRELOAD="$MEMSHIM_LIB" ;;
    thin) echo MEMSHIM_SAMPLE_BYTES=512K LD_PRELOAD="$MEMSHIM_LIB" ;;
    thin-notorch) echo MEMSHIM_SAMPLE_BYTES=512K MEMSHIM_TORCH=0 LD_PRELOAD="$MEMSHIM_LIB" ;;
    thin-nopy) echo MEMSHIM_SAMPLE_BYTES=512K MEMSHIM_PYTHON=0 LD_PRELOAD="$MEMSHIM_LIB" ;;
    thin-nocuda) echo MEMSHIM_SAMPLE_BYTES=512K MEMSHIM_CUDA=0 LD_PRELOAD="$MEMSHIM_LIB" ;;
    thin-before) echo MEMSHIM_SAMPLE_BYTES=512K LD_PRELOAD="$BEFORE_LIB" ;;
    full) echo LD_PRELOAD="$MEMSHIM_LIB" ;;
    full-before) echo LD_PRELOAD="$BEFORE_LIB" ;;
    esac
}
step() { # mode
    rm -rf "$w/t"
    env $(mode_env "$1") MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT="$w/t" \
        python3 examples/python/torch_train_overhead.py "$STEPS" mlp 2>&1 | tail -1 |
        awk '{for (i = 1; i < NF; i++) if ($i == "median_step_ms") print $(i + 1)}'
}
for r in $(seq "$ROUNDS"); do
    for mode in "${modes[@]}"; do
        echo "$mode $(step "$mode")" | tee -a "$raw"
    done
done
echo "== medians over $ROUNDS rounds (ratio to bare)"
base=$(awk '$1 == "bare" {print $2}' "$raw" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
for mode in "${modes[@]}"; do
    med=$(awk -v m="$mode" '$1 == m {print $2}' "$raw" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
    printf "%-9s %9s  x%s\n" "$mode" "$med" "$(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.3f", a / b}')"
done | tee "$OUT/floor.txt"

if [ -x .perf/perf ]; then
    perf() { LD_LIBRARY_PATH=$PWD/.perf:$PWD/.devlib .perf/perf "$@"; }
    for mode in ${PERF_MODES:-bare off thin}; do
        rm -rf "$w/t"
        perf record -q -F 1999 -g ${PERF_DELAY:+-D "$PERF_DELAY"} -o "$w/perf_$mode.data" -- env ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH=$LD_LIBRARY_PATH} \
            $(mode_env "$mode") MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT="$w/t" \
            python3 examples/python/torch_train_overhead.py "$STEPS" mlp >"$OUT/perf_${mode}_run.txt" 2>&1
        {
            flat() { perf report -i "$w/perf_$mode.data" --no-children -g none "$@" 2>/dev/null | grep -v '^#' | grep .; }
            echo "== by thread"
            flat --sort comm | head -15
            echo "== by object"
            flat --sort dso | head -25
            echo "== by symbol"
            flat --sort dso,sym | head -60
            echo "== the shim's own symbols"
            flat --sort sym --dsos libmemshim.so | head -40
            for sym in ${PERF_CALLERS:-}; do
                echo "== who calls $sym"
                perf report -i "$w/perf_$mode.data" --no-children --stdio -S "$sym" -g graph,0.5,callee,function,percent 2>/dev/null |
                    grep -v '^#' | grep . | head -60
            done
        } >"$OUT/perf_$mode.txt" 2>&1
    done
    echo "== perf: $OUT/perf_<mode>.txt"
else
    echo "== no .perf/perf carried: no profile"
fi
