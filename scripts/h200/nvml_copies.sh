#!/usr/bin/env bash
# NVML readings and the runtime's 2D/3D/peer copies and memsets on the GPU machine. Run from the
# repository root with target/release carried:  OUT=/some/dir bash scripts/h200/nvml_copies.sh
set -u
. scripts/h200/env.sh
w=/tmp/memshim-nvml && rm -rf "$w" && mkdir -p "$w"
{
    for rt in static shared; do
        nvcc -g -o "$w/shaped_$rt" examples/cuda/shaped_copies.cu -cudart "$rt"
        echo "== shaped_copies ($rt runtime)"
        "$M" run -q -o "$w/s$rt" -- "$w/shaped_$rt"
        "$M" report "$w/s$rt" | sed -n '/^transfers/,/site #1/p' | grep -v 'site #1'
    done
    echo "== torch_growing_leak.py 20"
    "$M" run -q -o "$w/leak" -- python3 examples/python/torch_growing_leak.py 20 | tail -1
    "$M" report "$w/leak" | grep -E '^device:|NVML|unaccounted|driver counted' | head -6
    "$M" report --format json "$w/leak" > "$w/leak.json"
    python3 -c "
import json; r = json.load(open('$w/leak.json'))
for p in r['processes']:
    for g in p['device']['gpus']: print('gpu', {k: g[k] for k in ('index','name','pcie_generation','pcie_width','numa_node','samples','peak_process_bytes')})
    print('pcie series:', [(s['kind'], len(s['points']), max((v for _, v in s['points']), default=0)) for s in p['timeline']['transfers'] if 'PCIe' in s['kind']])
"
} > "$OUT/nvml_copies.txt" 2>&1
cat "$OUT/nvml_copies.txt"
