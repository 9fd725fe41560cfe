#!/usr/bin/env bash
# Issue 18's GPU findings on PyTorch loops written apart from examples/python/torch_bound (a
# DataLoader input-bound loop, softmax/layer norm bandwidth, a mixed-size capacity cache, a device
# history leak): prints each verdict and NVML's readings.
#   OUT=/some/dir bash scripts/h200/unseen.sh
set -u
. scripts/h200/env.sh
ex=scripts/h200/unseen
w=/tmp/memshim-unseen && rm -rf "$w" && mkdir -p "$w"
{
    for prog in ${PROGS:-input_dataloader bandwidth_softmax capacity_mixed device_history}; do
        echo "=== $prog"
        # Wall seconds of the run (the symbol pass included) and of each report, and the JSON's size.
        t0=$(date +%s.%N)
        timeout 150 "$M" run -q -o "$w/$prog" -- python3 "$ex/$prog.py" 2>&1 | tail -3
        t1=$(date +%s.%N)
        "$M" report "$w/$prog" >"$w/$prog.txt" 2>&1
        t2=$(date +%s.%N)
        "$M" report --format json "$w/$prog" >"$w/$prog.json" 2>/dev/null
        t3=$(date +%s.%N)
        echo "seconds: run $(python3 -c "print(round($t1 - $t0, 2))"), report text $(python3 -c "print(round($t2 - $t1, 2))"), json $(python3 -c "print(round($t3 - $t2, 2))"); json bytes $(stat -c %s "$w/$prog.json")"
        sed -n '1,/^== /p' "$w/$prog.txt" | head -40
        grep -E 'NVML GPU|kernels ran|memory busy' "$w/$prog.txt" | head -6
        python3 - "$w/$prog.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict kinds", [v["kind"] for v in r["verdict"]])
PY
    done
} 2>&1 | tee "$OUT/unseen.txt"
tar czf "$OUT/unseen.tgz" -C "$w" $(cd "$w" && ls *.txt)
