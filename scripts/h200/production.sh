#!/usr/bin/env bash
# The production mode's cost on a quiet machine, interleaved over ROUNDS rounds:
# - PyTorch step times (examples/python/torch_train_overhead.py, mlp and transformer): bare; the
#   shim loaded but recording nothing (its fixed cost: helper threads, hooks); thin sampling at 512K
#   (the production mode: CUDA in full, only sampled host allocations recorded); sampling with every
#   host event recorded (MEMSHIM_SAMPLE_EVENTS=all); full host stacks.
# - The malloc-heavy C workload (benches/malloc_heavy.c): the same modes, wall and CPU seconds, and two
#   floors: one idle thread preloaded (benches/idle_thread.c: glibc's malloc locks once a process has
#   two threads) and the shim loaded with MEMSHIM_DISABLE=1.
# Prints each run, then the median of each row and its ratio to bare.
#   OUT=/some/dir ROUNDS=3 bash scripts/h200/production.sh
set -u
. scripts/h200/env.sh
ROUNDS=${ROUNDS:-3}
w=/tmp/memshim-production && rm -rf "$w" && mkdir -p "$w"
cc -O2 -g -o "$w/malloc_heavy" benches/malloc_heavy.c
cc -shared -fPIC -o "$w/idle_thread.so" benches/idle_thread.c -lpthread
raw="$OUT/production_raw.txt"
: >"$raw"
modes=(bare off thin all full)
# The environment of one mode, as arguments to env.
mode_env() {
    case $1 in
    off) echo MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 MEMSHIM_CUDA=0 ;;
    thin) echo MEMSHIM_SAMPLE_BYTES=512K ;;
    all) echo MEMSHIM_SAMPLE_BYTES=512K MEMSHIM_SAMPLE_EVENTS=all ;;
    full) echo ;;
    esac
}
# Preloaded directly, without symbolizing at exit: the step times are what is compared, and the
# symbol pass of every run would only spend device time.
run_mode() { # mode cmd...
    local mode=$1
    shift
    if [ "$mode" = bare ]; then
        "$@"
    else
        rm -rf "$w/t"
        env $(mode_env "$mode") MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT="$w/t" \
            LD_PRELOAD="$MEMSHIM_LIB" "$@"
    fi
}
for r in $(seq "$ROUNDS"); do
    for model in mlp transformer; do
        for mode in "${modes[@]}"; do
            ms=$(run_mode "$mode" python3 examples/python/torch_train_overhead.py 40 "$model" 2>&1 | tail -1 |
                awk '{for (i = 1; i < NF; i++) if ($i == "median_step_ms") print $(i + 1)}')
            echo "$model $mode ${ms:-nan}" | tee -a "$raw"
        done
    done
    for mode in "${modes[@]}" idle disabled; do
        if [ "$mode" = bare ]; then
            /usr/bin/time -f "%e %U %S" -o "$w/time" "$w/malloc_heavy" >/dev/null
        elif [ "$mode" = idle ]; then
            LD_PRELOAD="$w/idle_thread.so" /usr/bin/time -f "%e %U %S" -o "$w/time" "$w/malloc_heavy" >/dev/null
        elif [ "$mode" = disabled ]; then
            MEMSHIM_DISABLE=1 LD_PRELOAD="$MEMSHIM_LIB" /usr/bin/time -f "%e %U %S" -o "$w/time" "$w/malloc_heavy" >/dev/null
        else
            rm -rf "$w/t"
            env $(mode_env "$mode") MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT="$w/t" LD_PRELOAD="$MEMSHIM_LIB" \
                /usr/bin/time -f "%e %U %S" -o "$w/time" "$w/malloc_heavy" >/dev/null
        fi
        read -r wall user sys <"$w/time"
        echo "malloc_heavy $mode $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')" | tee -a "$raw"
    done
done
echo "== medians (ratio to bare)"
for what in mlp transformer malloc_heavy; do
    extra=(); [ $what = malloc_heavy ] && extra=(idle disabled)
    base=$(awk -v w=$what '$1 == w && $2 == "bare" {print $3}' "$raw" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
    for mode in "${modes[@]}" "${extra[@]}"; do
        med=$(awk -v w=$what -v m=$mode '$1 == w && $2 == m {print $3}' "$raw" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
        printf "%-13s %-5s %9s  x%s\n" "$what" "$mode" "$med" "$(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.3f", a / b}')"
    done
done | tee "$OUT/production.txt"
