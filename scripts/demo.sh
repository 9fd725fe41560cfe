#!/usr/bin/env bash
# Builds memshim, runs the bundled leaky example under it and prints the report.
# Usage: bash scripts/demo.sh   (from anywhere; needs the Rust toolchain and a C compiler)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --workspace --quiet
work=$(mktemp -d "${TMPDIR:-/tmp}/memshim-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
"${CC:-cc}" -g -O0 -o "$work/leaky" examples/c/leaky.c
target/release/memshim run -o "$work/traces" -- "$work/leaky"
target/release/memshim report "$work/traces"
