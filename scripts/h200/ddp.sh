#!/usr/bin/env bash
# A DDP job under memshim: `memshim run -- torchrun --nproc-per-node 2 examples/python/torch_ddp.py`.
# On one GPU the two ranks share it with gloo; with two or more, each rank gets its own with NCCL.
# Run from the repository root with target/release carried:  OUT=/some/dir bash scripts/h200/ddp.sh
# Writes $OUT/ddp.txt (the traces, the report's overview and ranks, the checks) and $OUT/ddp.json.
set -u
. scripts/h200/env.sh
w=/tmp/memshim-ddp && rm -rf "$w"
{
    nvidia-smi --query-gpu=index,name --format=csv,noheader
    echo "== bare"
    python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/python/torch_ddp.py 20 2>&1 | grep '^rank'
    echo "== memshim run"
    MEMSHIM_SAMPLE_BYTES=${MEMSHIM_SAMPLE_BYTES:-512K} "$M" run -q -o "$w" -- \
        python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/python/torch_ddp.py 20 2>&1 | grep '^rank'
    ls "$w"
    "$M" report --top 3 "$w" > "$w.txt" 2>&1
    sed -n '1,/^== /p' "$w.txt" | head -40
    "$M" report --format json "$w" > "$OUT/ddp.json"
    python3 - "$OUT/ddp.json" <<'PY'
import json, subprocess, sys
r = json.load(open(sys.argv[1]))
gpus = len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.splitlines())
rows = r["ranks"]["rows"] if r["ranks"] else []
print("ranks:", [(x["rank"], x["peak_device_bytes"] >> 20, x["leaked_device_bytes"] >> 20) for x in rows], "(MiB)")
assert [x["rank"] for x in rows] == [0, 1], "both ranks in the table"
assert rows[1]["leaked_device_bytes"] > rows[0]["leaked_device_bytes"], "rank 1 leaks more"
for f in r["ranks"]["findings"]:
    print("finding:", f["text"])
for p in r["processes"]:
    if p["rank"] is None:
        continue
    nccl = sum(o["allocated_bytes"] for o in p["device"]["owners"] if o["owner"] == "nccl")
    kinds = sorted({(t["direction"], t["host_memory"]) for t in p["transfers"]["summary"]})
    print(f"rank {p['rank']['rank']} ({p['role']}, {p['rank']['launcher']}): NCCL allocated {nccl} B of GPU memory; owners {[(o['owner'], o['allocated_bytes'], o['live_bytes']) for o in p['device']['owners']]}; copies {kinds}")
    for t in p["transfers"]["summary"]:
        print(f"  {t['direction']} {t['host_memory']}: {t['count']} copies, {t['bytes']} B, "
              f"sync GB/s {t['gbps']}, async GPU-timed {t['gpu_timed_count']} at {t['gpu_gbps']} GB/s")
    if p["rank"]["rank"] == 0 and gpus > 1:
        peer = [t for t in p["transfers"]["summary"] if t["direction"] == "peer"]
        assert peer and peer[0]["count"] >= 8 and peer[0]["bytes"] >= 8 << 22, "rank 0's peer copies"
        assert nccl > 0, "NCCL's device memory is attributed to NCCL"
print("checks passed")
PY
} > "$OUT/ddp.txt" 2>&1
cat "$OUT/ddp.txt"
