#!/usr/bin/env bash
# The report at scale, side by side with heaptrack_print: `memshim report` (text and --format json)
# and `heaptrack_print` of the same programs, wall seconds and peak RSS from /usr/bin/time, the
# best of ROUNDS runs each. Workloads: benches/live_blocks.c holding 3M blocks live at once; jq
# filtering a generated 38 MB JSON file (benches/big_json.py); live_blocks holding 10M blocks, also
# reported under a 2 GB address-space limit (prlimit --as=2000000000), which the report must fit in.
# Usage: bash benches/report_scale.sh   (from the repository root, after cargo build --release;
# benches/run.sh calls it). Needs heaptrack, jq, python3 and /usr/bin/time.
# Environment: ROUNDS (default 3), WORK (a directory to keep the traces in; default a temporary one),
# MEMSHIM (the memshim binary to time, default this checkout's release build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ROUNDS=${ROUNDS:-3}
M=${MEMSHIM:-"$root/target/release/memshim"}
if [ -n "${WORK:-}" ]; then
    work=$WORK; mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/memshim-report.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
"${CC:-cc}" -O2 -g -o "$work/live_blocks" benches/live_blocks.c
[ -s "$work/big.json" ] || python3 benches/big_json.py "$work/big.json"
jqargs=(-c 'map(select(.score > 0.5)) | length' "$work/big.json")

# Traces each workload with memshim and heaptrack (once; kept in $work for reruns).
trace() { # name cmd...
    local name=$1; shift
    [ -d "$work/$name.ms" ] || "$M" run -q -o "$work/$name.ms" -- "$@" >/dev/null
    [ -n "$(ls "$work/$name".ht.* 2>/dev/null)" ] || heaptrack -o "$work/$name.ht" "$@" >/dev/null 2>&1
}
trace live3m "$work/live_blocks" 3000000
trace jq jq "${jqargs[@]}"
trace live10m "$work/live_blocks" 10000000

# Best wall time over ROUNDS runs, with that run's peak RSS and CPU seconds (user + system: on a
# busy machine the steadier number): "label wall_s rss_kb cpu_s" appended to $work/rows.
: >"$work/rows"
best() { # label cmd...
    local label=$1; shift
    for _ in $(seq "$ROUNDS"); do
        if ! /usr/bin/time -f "%e %M %U %S" -o "$work/one" "$@" >/dev/null 2>"$work/err"; then
            echo "$label failed: $(tail -1 "$work/err")" >&2
            echo "1e9 0 0 0" >"$work/one"
        fi
        cat "$work/one"
    done | sort -n | head -1 | awk -v l="$label" '{print l, $1, $2, $3 + $4}' >>"$work/rows"
}
for w in live3m jq live10m; do
    ht=$(ls "$work/$w".ht.*)
    best "$w heaptrack_print" heaptrack_print "$ht"
    best "$w memshim-report" "$M" report "$work/$w.ms"
    best "$w memshim-report-json" "$M" report --format json "$work/$w.ms"
done
best "live10m memshim-report-2GB-limit" prlimit --as=2000000000 "$M" report "$work/live10m.ms"

printf "%-34s %8s %10s %8s %10s %12s %10s\n" "report of" "wall s" "x htprint" "CPU s" "x htprint" "max RSS MiB" "x htprint"
awk '{ k = $1 " " $2; wall[k] = $3; rss[k] = $4; cpu[k] = $5; order[++n] = k; w[k] = $1 }
END {
    for (i = 1; i <= n; i++) {
        k = order[i]; h = w[k] " heaptrack_print"
        if (wall[k] >= 1e9) { printf "%-34s %10s\n", k, "failed"; continue }
        printf "%-34s %8.2f %10.2f %8.2f %10.2f %12.1f %10.2f\n", k, wall[k], wall[k] / wall[h], cpu[k], cpu[k] / cpu[h], rss[k] / 1024, rss[k] / rss[h]
    }
}' "$work/rows"
for w in live3m jq live10m; do
    echo "$w: $("$M" info "$work/$w".ms/*.mshim | awk '/^  alloc /{a=$2} /^  free /{f=$2} END{print a " allocations, " f " frees"}'), memshim trace $(du -b "$work/$w".ms/*.mshim | cut -f1) B, heaptrack $(du -b "$work/$w".ht.* | cut -f1) B"
done
