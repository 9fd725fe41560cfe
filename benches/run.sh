#!/usr/bin/env bash
# Side-by-side overhead benchmark: the malloc-heavy workload bare, under memshim (full stacks; thin
# sampling of one allocation per 512 KiB, the production mode; and sampling with every event
# recorded) and under heaptrack, interleaved over ROUNDS rounds; 1 and 4 threads allocating; a
# program forking 50 children; Python; prints one table of ratios against the bare runs; then the
# report at scale side by side with heaptrack_print (benches/report_scale.sh); with TORCH_PY, a PyTorch
# job's symbol pass and reports (benches/torch_job.sh).
# Usage: bash benches/run.sh   (from the repository root; installs heaptrack from Debian if missing)
# Environment: ROUNDS (default 3), N (allocations, default 2000000), TN (allocations per thread,
# default 1000000), TORCH_PY (a Python with PyTorch: adds the PyTorch CPU training loop's rows).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
need=()
command -v heaptrack >/dev/null 2>&1 || need+=(heaptrack)
[ -x /usr/bin/time ] || need+=(time)
command -v bc >/dev/null 2>&1 || need+=(bc)
command -v jq >/dev/null 2>&1 || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --release --workspace --quiet
work=$(mktemp -d "${TMPDIR:-/tmp}/memshim-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A symbol cache of this run's own: the first round names frames from DWARF (cold), later rounds find
# them cached, as a user's second run of the same binaries does.
export MEMSHIM_SYMBOL_CACHE="$work/symbols"
"${CC:-cc}" -O2 -g -o "$work/malloc_heavy" benches/malloc_heavy.c
M="$root/target/release/memshim"

# Appends "name wall_seconds cpu_seconds" for one run of a command.
measure() { # name cmd...
    local name=$1; shift
    /usr/bin/time -f "$name %e %U %S" -a -o "$work/raw" "$@" >/dev/null 2>&1
    tail -1 "$work/raw" | awk '{print $1, $2, $3 + $4}' >> "$work/times"
}

for r in $(seq "$ROUNDS"); do
    measure bare "$work/malloc_heavy" "$N"
    rm -rf "$work/ms"; measure memshim "$M" run -q -o "$work/ms" -- "$work/malloc_heavy" "$N"
    rm -rf "$work/mss"
    measure memshim-sampled env MEMSHIM_SAMPLE_BYTES=512K "$M" run -q -o "$work/mss" -- "$work/malloc_heavy" "$N"
    rm -rf "$work/msa"
    measure memshim-sampled-all env MEMSHIM_SAMPLE_BYTES=512K MEMSHIM_SAMPLE_EVENTS=all \
        "$M" run -q -o "$work/msa" -- "$work/malloc_heavy" "$N"
    rm -rf "$work/ht"; mkdir -p "$work/ht"
    measure heaptrack heaptrack -o "$work/ht/ht" "$work/malloc_heavy" "$N"
done

# Threads and processes: benches/threads_alloc.c with 1 and with 4 threads allocating as fast as they
# can (the ratio to bare should not grow with the threads: they must not serialise on the shim),
# and benches/fork_children.c forking 50 children one after another, under `memshim run` and under a
# bare LD_PRELOAD (where each child used to name its frames at exit).
"${CC:-cc}" -O2 -g -pthread -o "$work/threads_alloc" benches/threads_alloc.c
"${CC:-cc}" -O2 -g -o "$work/fork_children" benches/fork_children.c
TN=${TN:-1000000}
for r in $(seq "$ROUNDS"); do
    for t in 1 4; do
        measure "threads$t-bare" "$work/threads_alloc" "$t" "$TN"
        rm -rf "$work/mt"; measure "threads$t-memshim" "$M" run -q -o "$work/mt" -- "$work/threads_alloc" "$t" "$TN"
    done
    measure forks-bare "$work/fork_children" 50
    rm -rf "$work/mf"; measure forks-memshim "$M" run -q -o "$work/mf" -- "$work/fork_children" 50
    rm -rf "$work/mfp"; mkdir -p "$work/mfp"
    measure forks-preload env LD_PRELOAD="$root/target/release/libmemshim.so" MEMSHIM_OUTPUT="$work/mfp" \
        MEMSHIM_QUIET=1 "$work/fork_children" 50
done

msfile=$(ls "$work"/ms/*.mshim)
htfile=$(ls "$work"/ht/ht*)
ms_bytes=$(stat -c %s "$msfile")
ht_bytes=$(stat -c %s "$htfile")
rstart=$(date +%s.%N); "$M" report --format json "$work/ms" > /dev/null; rend=$(date +%s.%N)
hstart=$(date +%s.%N); heaptrack_print "$htfile" > /dev/null 2>&1 || true; hend=$(date +%s.%N)
events=$("$M" info "$msfile" | awk '/^  (alloc|free) /{s+=$2} END{print s}')

# Python: the dict-building workload bare, under memshim (Python frames merged into native stacks; with
# native stacks only, MEMSHIM_PYTHON=0; with every object through malloc, --python-malloc) and under
# memray --native.
# The interpreter itself, not a launcher script (pyenv's shims are bash scripts memshim would trace too).
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
if ! "$PY" -m memray --version >/dev/null 2>&1; then
    "$PY" -m pip install -q memray >/dev/null 2>&1 || echo "(memray could not be installed; its row is left out)"
fi
for r in $(seq "$ROUNDS"); do
    measure py-bare "$PY" benches/python_dicts.py
    rm -rf "$work/pms"; measure py-memshim "$M" run -q -o "$work/pms" -- "$PY" benches/python_dicts.py
    rm -rf "$work/pmn"
    measure py-memshim-native env MEMSHIM_PYTHON=0 "$M" run -q -o "$work/pmn" -- "$PY" benches/python_dicts.py
    rm -rf "$work/pmm"
    measure py-memshim-pymalloc "$M" run -q --python-malloc -o "$work/pmm" -- "$PY" benches/python_dicts.py
    if "$PY" -m memray --version >/dev/null 2>&1; then
        rm -f "$work/mr.bin"
        measure py-memray "$PY" -m memray run --native -q -o "$work/mr.bin" benches/python_dicts.py
    fi
done

# Lent Python frames: a native thread allocating device memory (the stand-in driver) for Python code
# waiting 13 frames deep (benches/lent_frames.py), under memshim with Python frames and without.
bash tests/cuda/build.sh "$work/cuda" >/dev/null
"${CC:-cc}" -shared -fPIC -O2 -o "$work/lent_worker.so" tests/cuda/python/native_worker.c -ldl -lpthread
for r in $(seq "$ROUNDS"); do
    measure lent-bare env LD_LIBRARY_PATH="$work/cuda" "$PY" benches/lent_frames.py "$work/lent_worker.so"
    rm -rf "$work/ml"
    measure lent-memshim env LD_LIBRARY_PATH="$work/cuda" "$M" run -q -o "$work/ml" -- \
        "$PY" benches/lent_frames.py "$work/lent_worker.so"
    rm -rf "$work/mln"
    measure lent-memshim-native env LD_LIBRARY_PATH="$work/cuda" MEMSHIM_PYTHON=0 "$M" run -q -o "$work/mln" -- \
        "$PY" benches/lent_frames.py "$work/lent_worker.so"
done

# PyTorch: the issue's launch-bound MLP training loop on this machine's CPU
# (examples/python/torch_train_overhead.py ... mlp cpu), when TORCH_PY (a Python with torch; memray
# is installed into it if missing) is given: the median step time bare, under memshim (full stacks;
# thin sampling 512K), heaptrack and memray --native. Step times are measured inside the loop, so
# start-up and the tools' work at exit are left out.
steps=$work/steps
: >"$steps"
if [ -n "${TORCH_PY:-}" ] && "$TORCH_PY" -c 'import torch' >/dev/null 2>&1; then
    "$TORCH_PY" -m memray --version >/dev/null 2>&1 || "$TORCH_PY" -m pip install -q memray >/dev/null 2>&1 || true
    loop=(examples/python/torch_train_overhead.py 60 mlp cpu)
    step() { # name cmd...
        local name=$1; shift
        "$@" 2>&1 | awk -v n="$name" '{for (i = 1; i < NF; i++) if ($i == "median_step_ms") v = $(i + 1)} END {print n, v}' >>"$steps"
    }
    for r in $(seq "$ROUNDS"); do
        step torch-bare "$TORCH_PY" "${loop[@]}"
        rm -rf "$work/tf"; step torch-memshim "$M" run -q -o "$work/tf" -- "$TORCH_PY" "${loop[@]}"
        rm -rf "$work/tt"
        step torch-memshim-sampled env MEMSHIM_SAMPLE_BYTES=512K "$M" run -q -o "$work/tt" -- "$TORCH_PY" "${loop[@]}"
        rm -rf "$work/th"; mkdir -p "$work/th"
        step torch-heaptrack heaptrack -o "$work/th/th" "$TORCH_PY" "${loop[@]}"
        if "$TORCH_PY" -m memray --version >/dev/null 2>&1; then
            rm -f "$work/tm.bin"
            step torch-memray "$TORCH_PY" -m memray run --native -q -o "$work/tm.bin" "${loop[@]}"
        fi
    done
fi

awk -v n="$N" -v msb="$ms_bytes" -v htb="$ht_bytes" \
    -v rs="$(echo "$rend - $rstart" | bc)" -v hs="$(echo "$hend - $hstart" | bc)" -v ev="$events" '
{ wall[$1] += $2; cpu[$1] += $3; cnt[$1]++ }
END {
    printf "%-20s %10s %10s %10s %10s\n", "tool", "wall s", "x bare", "cpu s", "x bare"
    for (t in wall) {
        # Each row against the bare run of its group (py-, lent-, threads1-, threads4-, forks-), or of
        # malloc_heavy.
        g = t; sub(/-.*/, "", g)
        base = ((g "-bare") in wall) ? g "-bare" : "bare"
        bw = wall[base] / cnt[base]; bc = cpu[base] / cnt[base]
        w = wall[t] / cnt[t]; c = cpu[t] / cnt[t]
        printf "%-20s %10.3f %10.2f %10.3f %10.2f\n", t, w, w / bw, c, (bc > 0 ? c / bc : 0)
    }
    printf "\ntrace size: memshim %.2f bytes/allocation, heaptrack %.2f bytes/allocation\n", msb / n, htb / n
    printf "report: memshim %.3f s (%.1f M alloc+free events/s), heaptrack_print %.3f s\n", rs, ev / rs / 1e6, hs
}' "$work/times"
if [ -s "$steps" ]; then
    printf "\n%-22s %16s %10s\n" "PyTorch MLP, CPU" "median step ms" "x bare"
    awk '{ s[$1] += $2; c[$1]++ } END {
        b = s["torch-bare"] / c["torch-bare"]
        for (t in s) printf "%-22s %16.3f %10.2f\n", t, s[t] / c[t], s[t] / c[t] / b
    }' "$steps"
fi
echo "($ROUNDS interleaved rounds, $N allocations; $(nproc) cores, $(uname -m))"
echo
ROUNDS=$ROUNDS bash benches/report_scale.sh
# The PyTorch job from start to report: the symbol pass and the reports of its trace.
if [ -n "${TORCH_PY:-}" ] && "$TORCH_PY" -c 'import torch' >/dev/null 2>&1; then
    echo
    TORCH_PY=$TORCH_PY ROUNDS=$ROUNDS bash benches/torch_job.sh
fi
