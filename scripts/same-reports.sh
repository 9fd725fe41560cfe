#!/usr/bin/env bash
# Do two builds of memshim print the same reports? For changes that must not change what users see
# (a restructuring, a speed-up): traces of the example programs are made once, then every trace is
# reported by both builds in every format, and a diff of two runs' traces too, and compared byte for
# byte. The JSON of the second build may only add fields: both are compared after dropping the keys
# the first build does not have. The HTML page draws itself with its script, so its pages are opened
# in headless Chromium and the drawn DOM is compared (script elements left out: they carry the JSON).
#
#   scripts/same-reports.sh OLD_DIR NEW_DIR [WORK_DIR]
#
# OLD_DIR and NEW_DIR each hold a `memshim` and its `libmemshim.so` (copies of target/release/). The
# traces are made with NEW_DIR's build. Prints one line per differing report and a count; exits 1
# when any differs.
set -euo pipefail

old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
work=${3:-$(mktemp -d)}
mkdir -p "$work/bin" "$work/traces" "$work/old" "$work/new"
here=$(cd "$(dirname "$0")/.." && pwd)
examples="$here/examples/c"

programs=(leaky fork threads churn many_leaks phases fragment growing mmap_leak grow_release
    first_screen_leak cpp_new)
for p in "${programs[@]}"; do
    src="$examples/$p.c"
    cc=${CC:-cc}
    if [ -e "$examples/$p.cpp" ]; then src="$examples/$p.cpp"; cc=${CXX:-c++}; fi
    $cc -g -O0 -pthread "$src" -o "$work/bin/$p"
done

# Each program once; grow_release twice more, for `diff` (a run against itself and one against
# another program's).
run() {
    local name=$1
    shift
    rm -rf "$work/traces/$name"
    (cd "$work/bin" && "$new/memshim" run -q -o "$work/traces/$name" -- "$@" >/dev/null 2>&1) || true
}
for p in "${programs[@]}"; do run "$p" "./$p"; done
run grow_release2 ./grow_release

chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
# The page as drawn, without its script elements.
drawn() {
    "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --window-size=1200,900 \
        --user-data-dir="$work/profile" --virtual-time-budget=5000 --dump-dom "file://$1" 2>/dev/null |
        python3 -c 'import re,sys; sys.stdout.write(re.sub(r"(?s)<script\b.*?</script>", "", sys.stdin.read()))'
}

# JSON of `new` with the keys `old` lacks dropped, both printed the same way.
json_same() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
def only(n, o):
    if isinstance(n, dict) and isinstance(o, dict):
        return {k: only(v, o[k]) for k, v in n.items() if k in o}
    if isinstance(n, list) and isinstance(o, list) and len(n) == len(o):
        return [only(a, b) for a, b in zip(n, o)]
    return n
sys.exit(0 if json.dumps(only(new, old), sort_keys=True) == json.dumps(old, sort_keys=True) else 1)
EOF
}

compared=0
differ=0
compare() { # what, old file, new file, kind
    compared=$((compared + 1))
    case $4 in
        json)
            [ -s "$2" ] || [ -s "$3" ] || return 0
            json_same "$2" "$3" 2>/dev/null && return
            ;;
        html)
            [ -s "$2" ] || [ -s "$3" ] || return 0
            [ -n "$chromium" ] || { echo "no chromium: $1 compared as bytes"; cmp -s "$2" "$3" && return; }
            drawn "$2" >"$2.dom"
            drawn "$3" >"$3.dom"
            [ -s "$2.dom" ] && cmp -s "$2.dom" "$3.dom" && return
            ;;
        *) cmp -s "$2" "$3" && return ;;
    esac
    differ=$((differ + 1))
    echo "DIFFERS: $1 ($2 $3)"
}

for t in "$work"/traces/*/; do
    t=${t%/}
    name=$(basename "$t")
    for f in text json markdown html; do
        for b in old new; do
            bin=${!b}
            # Each trace file alone and the run's directory (all its processes in one report).
            for trace in "$t" "$t"/*.mshim; do
                out="$work/$b/$name.$(basename "$trace").$f"
                "$bin/memshim" report -f "$f" "$trace" >"$out" 2>"$out.err" || echo "exit $?" >>"$out.err"
            done
        done
        for trace in "$t" "$t"/*.mshim; do
            key="$name.$(basename "$trace").$f"
            compare "report $key" "$work/old/$key" "$work/new/$key" "$f"
            compare "stderr of report $key" "$work/old/$key.err" "$work/new/$key.err" text
        done
    done
done

# The options that change what the reports hold, on each run's directory: a suppressions file, a
# time window, --top, --min-bytes, --redact, --all-frames, a --fail-on limit; and bad settings (the
# errors must stay the same too).
printf 'leak:leak_malloc\nleak:*strdup*\n' >"$work/suppressions.txt"
variants=("--suppressions $work/suppressions.txt" "--since 0.001 --until 10" "--top 2" "--min-bytes 100"
    "--redact" "--all-frames" "--fail-on leaked-heap=1K --fail-on growth" "--since -1" "--since 2 --until 1"
    "--min-bytes lots" "--pid 1" "--program nothing-of-that-name")
for t in "$work"/traces/*/; do
    t=${t%/}
    name=$(basename "$t")
    for i in "${!variants[@]}"; do
        for f in text json markdown html; do
            for b in old new; do
                bin=${!b}
                out="$work/$b/$name.variant$i.$f"
                # shellcheck disable=SC2086
                "$bin/memshim" report -f "$f" ${variants[$i]} "$t" >"$out" 2>"$out.err" ||
                    echo "exit $?" >>"$out.err"
            done
            key="$name.variant$i.$f"
            compare "report ${variants[$i]} -f $f $name" "$work/old/$key" "$work/new/$key" "$f"
            compare "stderr of report ${variants[$i]} -f $f $name" "$work/old/$key.err" "$work/new/$key.err" text
        done
    done
done

for pair in "grow_release grow_release2" "leaky many_leaks" "fork threads"; do
    set -- $pair
    for f in text json markdown html; do
        for b in old new; do
            bin=${!b}
            out="$work/$b/diff.$1.$2.$f"
            "$bin/memshim" diff -f "$f" "$work/traces/$1" "$work/traces/$2" >"$out" 2>"$out.err" ||
                echo "exit $?" >>"$out.err"
        done
        compare "diff $1 $2 -f $f" "$work/old/diff.$1.$2.$f" "$work/new/diff.$1.$2.$f" "$f"
        compare "stderr of diff $1 $2 -f $f" "$work/old/diff.$1.$2.$f.err" "$work/new/diff.$1.$2.$f.err" text
    done
done

echo "$compared outputs compared, $differ differ (work in $work)"
[ "$differ" = 0 ]
