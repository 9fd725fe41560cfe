#!/usr/bin/env bash
# Two CLIs report the same traces of PyTorch jobs, interleaved: wall seconds and peak memory of the
# text and JSON reports, and whether their outputs are the same. The traces are made once with the
# carried build (target/release); OLD is a directory holding the other build's `memshim`.
#   OLD=.h200/old OUT=/some/dir ROUNDS=2 bash scripts/h200/report_ab.sh
set -u
. scripts/h200/env.sh
ROUNDS=${ROUNDS:-2}
OLD=$(cd "${OLD:-.h200/old}" && pwd)
ex=scripts/h200/unseen
w=/tmp/memshim-report-ab && rm -rf "$w" && mkdir -p "$w"
# Peak resident memory of a command, in MiB, and its wall seconds (no /usr/bin/time on the image).
measure() { # label cmd...
    local label=$1; shift
    python3 - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
t = time.time()
with open("/dev/null", "wb") as null:
    subprocess.run(sys.argv[2:], stdout=null, stderr=null)
wall = time.time() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{sys.argv[1]}: {wall:.2f} s, {rss:.0f} MiB")
PY
}
{
    for prog in ${PROGS:-device_history capacity_mixed}; do
        echo "=== $prog"
        timeout 150 "$M" run -q -o "$w/$prog" -- python3 "$ex/$prog.py" >/dev/null 2>&1
        ls -l "$w/$prog"
        for r in $(seq "$ROUNDS"); do
            for which in old new; do
                bin=$M; [ $which = old ] && bin=$OLD/memshim
                measure "round $r $which text" "$bin" report "$w/$prog"
                measure "round $r $which json" "$bin" report --format json "$w/$prog"
            done
        done
        for which in old new; do
            bin=$M; [ $which = old ] && bin=$OLD/memshim
            "$bin" report "$w/$prog" >"$w/$prog.$which.txt" 2>/dev/null
            "$bin" report --format json "$w/$prog" >"$w/$prog.$which.json" 2>/dev/null
        done
        cmp -s "$w/$prog.old.txt" "$w/$prog.new.txt" && echo "text: same" || echo "text: DIFFERS"
        cmp -s "$w/$prog.old.json" "$w/$prog.new.json" && echo "json: same" || echo "json: DIFFERS"
        echo "json bytes $(stat -c %s "$w/$prog.new.json")"
    done
} 2>&1 | tee "$OUT/report_ab.txt"
