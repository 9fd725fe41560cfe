#!/usr/bin/env bash
# A/B of two shims on the malloc-heavy workload (benches/malloc_heavy.c), interleaved over ROUNDS
# rounds: bare, one idle preloaded thread (benches/idle_thread.c: what a second thread alone costs
# glibc's allocator on this CPU), then each shim in the thin production mode (512K) and with full
# stacks. Prints
# "what mode wall cpu" per run.
#   OUT=/some/dir A=path/to/libmemshim.so B=path/to/other.so ROUNDS=3 bash scripts/h200/thin_ab.sh
set -u
. scripts/h200/env.sh
ROUNDS=${ROUNDS:-3}
w=/tmp/memshim-thin-ab && rm -rf "$w" && mkdir -p "$w"
cc -O2 -g -o "$w/malloc_heavy" benches/malloc_heavy.c
cc -shared -fPIC -o "$w/idle_thread.so" benches/idle_thread.c -lpthread
one() { # label env...
    local label=$1
    shift
    rm -rf "$w/t"
    env "$@" MEMSHIM_SYMBOLIZE=0 MEMSHIM_QUIET=1 MEMSHIM_OUTPUT="$w/t" \
        /usr/bin/time -f "%e %U %S" -o "$w/time" "$w/malloc_heavy" >/dev/null
    read -r wall user sys <"$w/time"
    echo "$label $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')" | tee -a "$OUT/thin_ab.txt"
}
for r in $(seq "$ROUNDS"); do
    one bare
    one idle LD_PRELOAD="$w/idle_thread.so"
    for v in A B; do
        lib=${!v}
        one "$v-thin" MEMSHIM_SAMPLE_BYTES=512K LD_PRELOAD="$lib"
        one "$v-full" LD_PRELOAD="$lib"
    done
done
