#!/usr/bin/env bash
# Regenerates the PyTorch sample reports of examples/reports/ on the GPU machine (redacted, Markdown and
# HTML): the growing device leak (examples/python/torch_growing_leak.py) and a two-rank DDP job
# (examples/python/torch_ddp.py under torchrun). Run from the repository root with target/release
# carried:  OUT=/some/dir bash scripts/h200/samples.sh   then copy $OUT/*.md and *.html to examples/reports/.
set -eu
. scripts/h200/env.sh
# A fixed place, so the paths in the samples do not change from one regeneration to the next.
work=/tmp/memshim-samples
rm -rf "$work" && mkdir -p "$work"
"$M" run -q -o "$work/leak" -- python3 examples/python/torch_growing_leak.py 60 > /dev/null
"$M" report --redact --top 5 --format markdown "$work/leak" > "$OUT/torch-growing-leak.md"
"$M" report --redact --format html -o "$OUT/torch-growing-leak.html" "$work/leak"
MEMSHIM_SAMPLE_BYTES=512K "$M" run -q -o "$work/ddp" -- \
    python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/python/torch_ddp.py 20 > /dev/null
"$M" report --redact --top 5 --format markdown "$work/ddp" > "$OUT/torch-ddp-ranks.md"
"$M" report --redact --format html -o "$OUT/torch-ddp-ranks.html" "$work/ddp"
ls -la "$OUT"
