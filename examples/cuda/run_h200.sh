#!/usr/bin/env bash
# run_h200.sh - builds the CUDA examples and runs each under memshim, on a machine with an NVIDIA GPU.
#
# Run from the repository root, with target/release/memshim and target/release/libmemshim.so built:
#   OUT=/some/dir bash examples/cuda/run_h200.sh
# For each example X in device_leak growing_leak oom_retry managed transfers it builds two binaries into
# $BUILD (default /tmp/memshim-cuda):
#   X         nvcc -g -o X X.cu                  (static CUDA runtime, nvcc's default)
#   X_shared  nvcc -g -cudart shared -o X_shared X.cu
# then runs each as `memshim run -o $TRACES/<name> -- $BUILD/<name>` (TRACES defaults to $OUT), writes
# `memshim report --format json` to $OUT/<name>.json and prints the text report to stdout.
# Environment: OUT (default /tmp/memshim-cuda/out), BUILD, TRACES, NVCC (default: nvcc on PATH, else
# /usr/local/cuda/bin/nvcc), NVCC_FLAGS (extra nvcc flags, e.g. -arch=sm_90), EXAMPLES (to run a subset).
# One example failing does not stop the others: each prints a "PASS <name>" or "FAIL <name>: <why>"
# line, a summary follows, and the exit status is 1 when anything failed.
set -u

root=$(pwd)
memshim=$root/target/release/memshim
src=$root/examples/cuda
OUT=${OUT:-/tmp/memshim-cuda/out}
BUILD=${BUILD:-/tmp/memshim-cuda}
TRACES=${TRACES:-$OUT}
EXAMPLES=${EXAMPLES:-device_leak growing_leak oom_retry managed transfers}
NVCC_FLAGS=${NVCC_FLAGS:-}

if [ ! -x "$memshim" ] || [ ! -f "$root/target/release/libmemshim.so" ]; then
    echo "FAIL setup: $memshim or target/release/libmemshim.so is missing (cargo build --release)"
    exit 1
fi
if [ ! -f "$src/device_leak.cu" ]; then
    echo "FAIL setup: run this from the repository root (no examples/cuda/device_leak.cu here)"
    exit 1
fi
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
    echo "FAIL setup: no nvcc (looked on PATH and at /usr/local/cuda/bin/nvcc; set NVCC)"
    exit 1
fi
mkdir -p "$OUT" "$BUILD" "$TRACES"

echo "== environment"
"$NVCC" --version | tail -n 2
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>&1 || echo "(nvidia-smi failed)"
"$memshim" --version 2>&1

passed=()
failed=()
fail() { # name, reason
    echo "FAIL $1: $2"
    failed+=("$1: $2")
}

run_one() { # name (binary in $BUILD)
    local name=$1 trace_dir=$TRACES/$1 rc
    rm -rf "$trace_dir"
    echo
    echo "== run $name"
    "$memshim" run -o "$trace_dir" -- "$BUILD/$name"
    rc=$?
    local ok=1
    if [ "$rc" -ne 0 ]; then
        fail "$name" "the program exited with status $rc under memshim"
        ok=0
    fi
    echo "== report $name (text)"
    if ! "$memshim" report "$trace_dir"; then
        fail "$name" "memshim report (text) failed"
        ok=0
    fi
    if ! "$memshim" report --format json "$trace_dir" > "$OUT/$name.json"; then
        fail "$name" "memshim report --format json failed"
        ok=0
    fi
    if [ "$ok" -eq 1 ]; then
        echo "PASS $name"
        passed+=("$name")
    fi
}

for ex in $EXAMPLES; do
    if [ ! -f "$src/$ex.cu" ]; then
        fail "$ex" "no such example: $src/$ex.cu"
        continue
    fi
    for variant in static shared; do
        if [ "$variant" = static ]; then name=$ex; extra=(); else name=${ex}_shared; extra=(-cudart shared); fi
        echo
        echo "== build $name"
        # shellcheck disable=SC2086 # NVCC_FLAGS is a list of words
        if ! (cd "$src" && "$NVCC" -g ${extra[@]+"${extra[@]}"} $NVCC_FLAGS -o "$BUILD/$name" "$ex.cu"); then
            fail "$name" "nvcc failed"
            continue
        fi
        run_one "$name"
    done
done

echo
echo "== summary: $(( ${#passed[@]} )) of $(( ${#passed[@]} + ${#failed[@]} )) runs passed"
for n in ${passed[@]+"${passed[@]}"}; do echo "PASS $n"; done
for f in ${failed[@]+"${failed[@]}"}; do echo "FAIL $f"; done
[ "${#failed[@]}" -eq 0 ]
