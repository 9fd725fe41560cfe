#!/usr/bin/env bash
# CUPTI's unified-memory counters on the GPU machine: examples/cuda/managed_migrations.cu under
# memshim with MEMSHIM_CUPTI=1 (and once without, for the report's "not measured" line), and the
# cost of CUPTI on the PyTorch training loop's steps. Run from the repository root with
# target/release carried:  OUT=/some/dir bash scripts/h200/cupti_um.sh
set -u
. scripts/h200/env.sh
for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/libcupti.so" ] && export MEMSHIM_CUPTI_LIB=$d/libcupti.so && break
done
w=/tmp/memshim-um && rm -rf "$w" && mkdir -p "$w"
{
    nvcc -O2 -o "$w/managed_migrations" examples/cuda/managed_migrations.cu
    echo "== bare"
    "$w/managed_migrations"
    echo "== MEMSHIM_CUPTI=1 (MEMSHIM_CUPTI_LIB=${MEMSHIM_CUPTI_LIB:-unset})"
    MEMSHIM_CUPTI=1 "$M" run -q -o "$w/on" -- "$w/managed_migrations"
    "$M" report "$w/on" | grep -E 'unified memory|managed|finding: managed' | head -8
    "$M" report --format json "$w/on" | python3 -c "
import json, sys
r = json.load(sys.stdin)
for p in r['processes']:
    u = p['device']['unified_memory']
    print({k: u[k] for k in u if k != 'sites'})
    for s in u['sites']:
        f = next((x['function'] for x in s['frames'] if x['function'] and 'on_demand' in x['function'] or x['function'] and 'prefetched' in x['function']), None)
        print('  site', f, {k: s[k] for k in s if k != 'frames'})
"
    echo "== without CUPTI"
    "$M" run -q -o "$w/off" -- "$w/managed_migrations" > /dev/null
    "$M" report "$w/off" | grep -E 'finding: .*managed' | head -2
} > "$OUT/cupti_um.txt" 2>&1
cat "$OUT/cupti_um.txt"
