#!/usr/bin/env bash
# Python frames on the GPU machine: PyTorch's device leak, growth and pageable copies must name the lines
# of the training scripts. Run from the repository root after building here and carrying target/release:
#   OUT=/some/dir bash scripts/h200/python_frames.sh
# Writes into $OUT: python_frames.txt (the sites with their Python frames, and the overhead of Python
# frames on benches/python_dicts.py) and python_reports.tar.gz (the JSON reports).
set -u
OUT=${OUT:-/tmp/memshim-h200}
mkdir -p "$OUT"
root=$(pwd)
M="$root/target/release/memshim"
export MEMSHIM_LIB="$root/target/release/libmemshim.so"
# libunwind is not on the image; overhead.sh's copy is used when it was carried.
[ -d "$root/.devlib" ] && export LD_LIBRARY_PATH="$root/.devlib:${LD_LIBRARY_PATH:-}"
work=/tmp/memshim-pyframes
rm -rf "$work" && mkdir -p "$work/json"
py=$(${PYTHON:-python3} -c 'import sys; print(sys.executable)')

# Prints each site of a JSON report section with its innermost Python frames.
sites() { # json jq-ish selector label
    "$py" - "$1" "$2" "$3" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
sel, label = sys.argv[2], sys.argv[3]
for p in report["processes"]:
    if p.get("python") is None:
        continue
    node = p
    for k in sel.split("."):
        node = node[k]
    for s in node[:4]:
        py = [f for f in s["frames"] if f["kind"] == "python"]
        where = " <- ".join(f"{f['function']} {f['file'].rsplit('/', 1)[-1]}:{f['line']}" for f in py[:3])
        nat = next((f["function"] for f in s["frames"] if f["kind"] == "native" and f["function"]), "?")
        size = s.get("bytes", s.get("live_bytes"))
        extra = f" {s['direction']} {s['host_memory']} x{s['count']}" if "direction" in s else ""
        print(f"  {label}{extra} {size} B: {where or '(no Python frames)'}   [native: {nat}]")
    print(f"  python: {p['python']}")
EOF
}

{
    "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
    for conf in "" "expandable_segments:True"; do
        echo "== torch_growing_leak.py 60 (PYTORCH_CUDA_ALLOC_CONF=$conf)"
        d="$work/leak$conf"
        PYTORCH_CUDA_ALLOC_CONF=$conf "$M" run -q -o "$d" -- "$py" examples/python/torch_growing_leak.py 60
        "$M" report --format json "$d" > "$work/json/leak${conf:+_expandable}.json"
        sites "$work/json/leak${conf:+_expandable}.json" leaks.device.sites "device leak"
        sites "$work/json/leak${conf:+_expandable}.json" growth.device "device growth"
    done
    echo "== torch_dataloader_pinned.py 300"
    "$M" run -q -o "$work/copy" -- "$py" examples/python/torch_dataloader_pinned.py 300
    "$M" report --format json "$work/copy" > "$work/json/copy.json"
    sites "$work/json/copy.json" transfers.sites "copy"
    "$M" report "$work/copy" | grep -m3 -i "pageable"
    echo "== python_dicts.py: bare, memshim (Python frames), memshim MEMSHIM_PYTHON=0 (3 rounds, wall s)"
    for r in 1 2 3; do
        for mode in bare frames native; do
            rm -rf "$work/pd"
            s=$EPOCHREALTIME
            case $mode in
                bare) "$py" benches/python_dicts.py > /dev/null ;;
                frames) "$M" run -q -o "$work/pd" -- "$py" benches/python_dicts.py > /dev/null ;;
                native) MEMSHIM_PYTHON=0 "$M" run -q -o "$work/pd" -- "$py" benches/python_dicts.py > /dev/null ;;
            esac
            e=$EPOCHREALTIME
            echo "$mode $s $e"
        done
    done | awk '{w[$1]+=$3-$2; n[$1]++} END {for (k in w) printf "  %-7s %.3f s (x%.2f)\n", k, w[k]/n[k], (w[k]/n[k])/(w["bare"]/n["bare"])}'
} > "$OUT/python_frames.txt" 2>&1
tar -C "$work" -czf "$OUT/python_reports.tar.gz" json
cat "$OUT/python_frames.txt"
