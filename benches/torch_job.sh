#!/usr/bin/env bash
# A PyTorch job from start to report, on this machine's CPU: the launch-bound MLP training loop
# (examples/python/torch_train_overhead.py STEPS mlp cpu, whose `import torch` alone makes a million
# distinct stacks) bare, preloaded (the shim's cost over the whole job, import included), under
# `memshim run` (the same plus the symbol pass after the program ends), then the report of its
# trace as text, JSON and HTML. With OLD (a directory holding another build's `memshim` and
# `libmemshim.so`), both builds are measured in the same rounds, interleaved, each reporting its
# own trace. Prints the median of ROUNDS rounds: wall seconds, CPU seconds (user + system) and peak
# RSS from /usr/bin/time, the trace's size and each report's size.
# Usage: TORCH_PY=/path/to/python-with-torch [OLD=dir] [ROUNDS=3] [STEPS=60] [DEVICE=cpu|cuda]
# [TIME=/usr/bin/time] bash benches/torch_job.sh (from the repository root, after cargo build
# --release; benches/run.sh calls it with TORCH_PY; scripts/h200/stack_tree_ab.sh with DEVICE=cuda).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
: "${TORCH_PY:?TORCH_PY must name a Python with torch}"
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-60}
DEVICE=${DEVICE:-cpu}
TIME=${TIME:-/usr/bin/time}
work=$(mktemp -d "${TMPDIR:-/tmp}/memshim-torch-job.XXXXXX")
trap 'rm -rf "$work"' EXIT
export MEMSHIM_SYMBOL_CACHE="$work/symbols"
job=("$TORCH_PY" examples/python/torch_train_overhead.py "$STEPS" mlp "$DEVICE")
builds=(new)
declare -A dir=([new]="$root/target/release")
if [ -n "${OLD:-}" ]; then
    builds=(old new)
    dir[old]=$(cd "$OLD" && pwd)
fi

# Appends "label wall cpu rss_mib" for one run of a command.
measure() { # label cmd...
    local label=$1; shift
    "$TIME" -f "%e %U %S %M" -o "$work/one" "$@" >"$work/stdout" 2>/dev/null || {
        echo "$label failed" >&2
        return 0
    }
    awk -v l="$label" '{printf "%s %.3f %.3f %.1f\n", l, $1, $2 + $3, $4 / 1024}' "$work/one" >>"$work/rows"
}
: >"$work/rows"
: >"$work/sizes"
for r in $(seq "$ROUNDS"); do
    measure "bare job" "${job[@]}"
    for b in "${builds[@]}"; do
        d=${dir[$b]}
        rm -rf "$work/pre-$b" && mkdir -p "$work/pre-$b"
        measure "$b preloaded" env LD_PRELOAD="$d/libmemshim.so" MEMSHIM_OUTPUT="$work/pre-$b" \
            MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 "${job[@]}"
        rm -rf "$work/run-$b"
        measure "$b run" env MEMSHIM_LIB="$d/libmemshim.so" "$d/memshim" run -q -o "$work/run-$b" -- "${job[@]}"
        for f in text json html; do
            measure "$b report-$f" "$d/memshim" report -f "$f" -o "$work/report-$b.$f" "$work/run-$b"
            [ "$r" = 1 ] && echo "$b report-$f $(stat -c %s "$work/report-$b.$f")" >>"$work/sizes"
        done
        [ "$r" = 1 ] && echo "$b trace $(stat -c %s "$work"/run-$b/*.mshim)" >>"$work/sizes"
    done
done

printf "%-22s %9s %9s %10s\n" "median of $ROUNDS" "wall s" "CPU s" "RSS MiB"
for label in $(awk '{print $1 "_" $2}' "$work/rows" | awk '!seen[$0]++'); do
    l=${label/_/ }
    for col in 3 4 5; do
        awk -v l="$l" -v c="$col" '$1 " " $2 == l {print $c}' "$work/rows" | sort -n |
            awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
    done | paste -sd' ' | awk -v l="$l" '{printf "%-22s %9.2f %9.2f %10.0f\n", l, $1, $2, $3}'
done
# The symbol pass: what `memshim run` adds to the preloaded job, round by round.
for b in "${builds[@]}"; do
    paste <(awk -v b="$b" '$1 == b && $2 == "run" {print $3}' "$work/rows") \
        <(awk -v b="$b" '$1 == b && $2 == "preloaded" {print $3}' "$work/rows") |
        awk '{print $1 - $2}' | sort -n |
        awk -v b="$b" '{v[NR] = $1} END {printf "%-22s %9.2f   (run - preloaded, median)\n", b " symbol pass", v[int((NR + 1) / 2)]}'
done
echo
awk '{printf "%-22s %12d bytes\n", $1 " " $2, $3}' "$work/sizes"
echo "($ROUNDS interleaved rounds, $STEPS steps on $DEVICE; $(nproc) cores, $(uname -m))"
