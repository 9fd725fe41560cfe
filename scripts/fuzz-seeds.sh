#!/usr/bin/env bash
# Makes the fuzz seeds (fuzz/seeds/): traces of the C examples under `memshim run`, compressed, raw
# (MEMSHIM_COMPRESS=0) and thinly sampled, and for the records target the raw payloads of the raw
# traces' uncompressed frames, each behind the byte that picks its version and kind (see
# memshim_trace::fuzz_entry::read_payload). Needs a release build: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
# The traces name the programs, the shim and the sources by path: all of them under one neutral
# directory, the sources as /src (no path of the machine that made the seeds is in them).
work=/tmp/memshim-seeds
rm -rf "$work"
mkdir -p "$work/lib"
trap 'rm -rf "$work"' EXIT
cp target/release/memshim target/release/libmemshim.so "$work/lib/"
memshim=$work/lib/memshim
export MEMSHIM_LIB=$work/lib/libmemshim.so
cp examples/c/*.c examples/c/*.cpp "$work/"
cd "$work"
for f in leaky fork threads churn mmap_leak many_leaks phases fragment growing; do
  cc -g -O1 -ffile-prefix-map="$work"=/src -o "$f" "$f.c" -lpthread
done
c++ -g -O1 -ffile-prefix-map="$work"=/src -o cpp_new cpp_new.cpp
for f in leaky fork threads churn mmap_leak many_leaks phases fragment growing cpp_new; do
  "$memshim" run -q -o "out/$f" -- "./$f" > /dev/null
done
for f in leaky fork threads churn many_leaks; do
  MEMSHIM_COMPRESS=0 "$memshim" run -q -o "raw/$f" -- "./$f" > /dev/null
done
MEMSHIM_SAMPLE_BYTES=4096 MEMSHIM_SAMPLE_EVENTS=sampled "$memshim" run -q -o sampled/churn -- ./churn > /dev/null
cd - > /dev/null
python3 - "$work" <<'PY'
import glob, os, struct, sys
work = sys.argv[1]
for t in ("frames", "records", "report"):
    os.makedirs(f"fuzz/seeds/{t}", exist_ok=True)
for f in sorted(glob.glob(f"{work}/*/*/*.mshim")):
    kind, prog = f.split("/")[-3:-1]
    b = open(f, "rb").read()
    if len(b) > 60000:
        continue
    i = 0
    while os.path.exists(f"fuzz/seeds/frames/seed-{kind}-{prog}-{i}"):
        i += 1
    name = f"seed-{kind}-{prog}-{i}"
    for t in ("frames", "report"):
        open(f"fuzz/seeds/{t}/{name}", "wb").write(b)
    if kind != "raw":
        continue
    version = struct.unpack("<I", b[8:12])[0]
    at = 20 + struct.unpack("<I", b[12:16])[0]
    k = 0
    while at + 30 <= len(b):
        flags, length = b[at + 1], struct.unpack("<I", b[at + 2:at + 6])[0]
        payload = b[at + 30:at + 30 + length]
        if flags & 1 == 0 and len(payload) < 30000:
            select = (version - 1) | (0x40 if flags & 2 else 0)
            open(f"fuzz/seeds/records/{name}-{k}", "wb").write(bytes([select]) + payload)
        at += 30 + length
        k += 1
PY
du -sh fuzz/seeds/*
