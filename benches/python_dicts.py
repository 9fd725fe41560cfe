"""The Python workload of the performance issue: builds 400,000 dicts holding lists, strings and
bytearrays, keeps every tenth, and prints a checksum. Used by benches/run.sh to compare memshim with
memray on a Python program.
"""
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
kept = []
total = 0
for i in range(N):
    d = {
        "id": i,
        "name": "item-%d" % i,
        "values": [i, i * 2, i * 3],
        "blob": bytearray(64 + i % 64),
    }
    total += len(d["name"]) + len(d["blob"])
    if i % 10 == 0:
        kept.append(d)
print("dicts", N, "kept", len(kept), "checksum", total)
