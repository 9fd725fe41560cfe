#!/usr/bin/env bash
# The three GPU findings on PyTorch loops of each kind (issue 18): an input-bound loop (gpu_idle), a
# bandwidth-bound loop (bandwidth_bound) and a job holding 96% of the GPU (capacity_bound), from
# examples/python/torch_bound. Prints each report's verdict and its NVML lines.
#   OUT=/some/dir [REPORTS=0] bash scripts/h200/gpu_findings.sh
# The traces are packed into $OUT/gpu_findings_traces.tgz; REPORTS=0 leaves the reports to be made
# elsewhere (a PyTorch report takes the GPU machine tens of seconds).
set -u
. scripts/h200/env.sh
ex=examples/python/torch_bound
w=/tmp/memshim-gpu-findings && rm -rf "$w" && mkdir -p "$w"
{
    for prog in input_bound bandwidth_bound capacity_bound; do
        echo "=== $prog"
        timeout 120 "$M" run -q -o "$w/$prog" -- python3 "$ex/$prog.py" 2>&1 | tail -2
        [ "${REPORTS:-1}" = 0 ] && continue
        "$M" report "$w/$prog" >"$w/$prog.txt" 2>&1
        "$M" report --format json "$w/$prog" >"$w/$prog.json" 2>/dev/null
        sed -n '1,/^== /p' "$w/$prog.txt" | grep -E -A2 'idle|bandwidth|capacity|GPU [0-9]' | head -24
        grep -E 'NVML GPU|kernels ran|memory busy' "$w/$prog.txt" | head -6
        python3 - "$w/$prog.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["processes"]:
    for g in p["device"].get("gpus", []):
        print("gpu", g["index"], "samples", g["samples"], "kernels %", g.get("mean_gpu_util"),
              "memory % while busy", g.get("busy_memory_util"), "peak used", g["peak_used_bytes"],
              "of", g["total_bytes"], "process", g.get("peak_process_bytes"))
print("verdict kinds", [v["kind"] for v in r["verdict"]])
PY
    done
} 2>&1 | tee "$OUT/gpu_findings.txt"
[ "${REPORTS:-1}" = 0 ] || tar czf "$OUT/gpu_findings.tgz" -C "$w" $(cd "$w" && ls *.txt *.json)
tar czf "$OUT/gpu_findings_traces.tgz" -C "$w" input_bound bandwidth_bound capacity_bound
