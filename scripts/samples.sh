#!/usr/bin/env bash
# Regenerates the sample reports under examples/reports/ (redacted): a C program with host leaks and
# growth, and the stand-in CUDA driver's copy and out-of-memory programs (no GPU needed), each in
# Markdown and HTML. Usage: bash scripts/samples.sh   (needs the Rust toolchain and a C compiler)
# The PyTorch samples (torch-*.md, torch-*.html) need a GPU: scripts/h200/samples.sh makes them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --workspace --quiet
# A fixed place, so the paths in the samples do not change from one regeneration to the next.
work=/tmp/memshim-samples
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
M=target/release/memshim
out=examples/reports

"${CC:-cc}" -g -O0 -o "$work/leaky" examples/c/leaky.c
"${CC:-cc}" -g -O0 -o "$work/growing" examples/c/growing.c
"$M" run -q -o "$work/c1" -- "$work/leaky" > /dev/null
"$M" run -q -o "$work/c2" -- "$work/growing"
"$M" report --redact --format markdown "$work/c1" "$work/c2" > "$out/c-leaks-and-growth.md"
"$M" report --redact --format html -o "$out/c-leaks-and-growth.html" "$work/c1" "$work/c2"

bash tests/cuda/build.sh "$work/cuda" > /dev/null
LD_LIBRARY_PATH="$work/cuda" "$M" run -q -o "$work/g1" -- "$work/cuda/copies" > /dev/null
STANDIN_CUDA_MEM_BYTES=64M LD_LIBRARY_PATH="$work/cuda" "$M" run -q -o "$work/g2" -- "$work/cuda/oom_retry" > /dev/null
"$M" report --redact --format markdown "$work/g1" "$work/g2" > "$out/cuda-standin-copies-and-oom.md"
"$M" report --redact --format html -o "$out/cuda-standin-copies-and-oom.html" "$work/g1" "$work/g2"
echo "samples written to $out"
