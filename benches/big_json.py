"""Writes the JSON input of the report-at-scale benchmark: an array of about 208,000 records (user,
tags, nested numbers), 38 MB, the same bytes every run (a fixed seed). jq reading it makes about
4 million allocations with a peak of about 400 MiB live.
Usage: python3 benches/big_json.py OUT.json [BYTES]
"""
import json
import random
import sys

out = sys.argv[1]
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 38_000_000
rng = random.Random(7)
written = 0
with open(out, "w") as f:
    f.write("[")
    i = 0
    while written < limit:
        record = {
            "id": i,
            "name": "user%d" % i,
            "email": "u%d@example.org" % i,
            "score": rng.random(),
            "tags": [rng.choice(["a", "bb", "ccc", "dddd"]) for _ in range(rng.randint(1, 6))],
            "nested": {
                "x": rng.randint(0, 1000),
                "y": [rng.randint(0, 9) for _ in range(4)],
                "ok": rng.random() < 0.5,
            },
        }
        text = json.dumps(record)
        if i:
            f.write(",")
        f.write(text)
        written += len(text) + 1
        i += 1
    f.write("]")
