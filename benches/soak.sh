#!/usr/bin/env bash
# The soak (issue 16): benches/soak.c with THREADS threads for DURATION seconds under the shim (full
# stacks), its resident and virtual size read every STEP seconds, beside the same program bare for
# BARE seconds (its sizes settle within the first seconds).
# What the traced process gains over the run is the shim's own; it must stay flat. Also prints the
# trace's size and the events the report counts (dropped ones are in the trace's end record).
#   THREADS=4 DURATION=600 BARE=60 STEP=60 bash benches/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-4}
seconds=${DURATION:-600}
bare_seconds=${BARE:-60}
step=${STEP:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -g -pthread -o "$work/soak" benches/soak.c
lib=$PWD/target/release/libmemshim.so
memshim=$PWD/target/release/memshim
[ -f "$lib" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }

watch() { # pid label
  local pid=$1 label=$2 t=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep "$step"; t=$((t + step))
    if [ -r "/proc/$pid/status" ]; then
      awk -v t="$t" -v l="$label" '/^VmRSS|^VmSize/ {v[$1]=$2} END {printf "%-6s %5d s  RSS %8.1f MiB  VmSize %8.1f MiB\n", l, t, v["VmRSS:"]/1024, v["VmSize:"]/1024}' "/proc/$pid/status" || true
    fi
  done
}

echo "soak: $threads threads, $seconds s traced, $bare_seconds s bare, readings every $step s ($(nproc) cores)"
"$work/soak" "$threads" "$bare_seconds" > "$work/bare.out" &
watch $! bare
wait
MEMSHIM_OUTPUT="$work/traces" LD_PRELOAD="$lib" "$work/soak" "$threads" "$seconds" > "$work/traced.out" 2> "$work/traced.err" &
watch $! traced
wait
echo "bare:   $(cat "$work/bare.out")"
echo "traced: $(cat "$work/traced.out")"
ls -l "$work"/traces/*.mshim | awk '{printf "trace: %.1f MiB\n", $5/1048576}'
"$memshim" report -f json "$work/traces" | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
h = p["heap"]
print("recorded: %d allocations, %d frees, dropped events %d, missing frames %d, end %s" % (h["allocations"], h["frees"], p["dropped_events"], p["missing_frames"], p["end"]))'
