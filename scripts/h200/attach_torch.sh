#!/usr/bin/env bash
# `memshim attach` to a PyTorch training loop that is already running (examples/python/attach/
# torch_loop.py): attached about 5 s into the loop for 8 s, the report holds the device allocations
# and copies made after attach (through CUPTI's driver callbacks), with the memory in use at attach.
# Then once more with the loop holding CUPTI itself (HOLD_CUPTI=1), where the report says what it
# could not see. First, the CUPTI facts memshim relies on, from the installed headers: the layout of
# CUpti_CallbackData and the callback id of every driver call it subscribes to.
#   OUT=/some/dir bash scripts/h200/attach_torch.sh
set -u
. scripts/h200/env.sh
w=/tmp/memshim-attach-torch && rm -rf "$w" && mkdir -p "$w"
export PYTHONUNBUFFERED=1

abi() {
    inc=$(dirname "$(find / -xdev -name cupti_callbacks.h 2>/dev/null | head -1)")
    echo "== CUPTI headers in $inc; libraries:"
    find / -xdev -name 'libcupti.so*' 2>/dev/null | grep -v '^/proc' | head -6
    {
        echo '#include <stddef.h>'
        echo '#include <stdio.h>'
        echo '#include <cupti.h>'
        echo '#define OFF(f) printf("  %-20s offset %zu\n", #f, offsetof(CUpti_CallbackData, f))'
        echo '#define ID(n, want) printf("%s %s %d (memshim %d)\n", CUPTI_DRIVER_TRACE_CBID_##n == want ? "ok  " : "DIFF", #n, CUPTI_DRIVER_TRACE_CBID_##n, want)'
        echo 'int main(void) {'
        echo '  printf("CUPTI_API_VERSION %d, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED %d, sizeof CUpti_CallbackData %zu\n", CUPTI_API_VERSION, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, sizeof(CUpti_CallbackData));'
        echo '  OFF(callbackSite); OFF(functionName); OFF(functionParams); OFF(functionReturnValue); OFF(correlationData);'
        # The ids of shim/src/cuda/attached/calls.rs.
        for p in cuMemAlloc_v2:243 cuMemAllocPitch_v2:244 cuMemAllocManaged:371 cuMemAllocAsync:598 cuMemAllocAsync_ptsz:599 \
            cuMemAllocFromPoolAsync:611 cuMemAllocFromPoolAsync_ptsz:612 cuMemHostAlloc:39 cuMemHostAlloc_v2:271 cuMemAllocHost_v2:294 \
            cuMemHostRegister:301 cuMemHostRegister_v2:379 cuMemAddressReserve:547 cuMemCreate:549 cuMemMap:551 cuMemFree_v2:245 \
            cuMemFreeAsync:600 cuMemFreeAsync_ptsz:601 cuMemFreeHost:38 cuMemHostUnregister:302 cuMemAddressFree:548 cuMemRelease:550 \
            cuMemUnmap:552 cuMemGetInfo_v2:242 cuMemcpy:305 cuMemcpy_ptds:408 cuMemcpyAsync:306 cuMemcpyAsync_ptsz:418 \
            cuMemcpyHtoD_v2:276 cuMemcpyHtoD_v2_ptds:397 cuMemcpyDtoH_v2:278 cuMemcpyDtoH_v2_ptds:398 cuMemcpyDtoD_v2:280 \
            cuMemcpyDtoD_v2_ptds:399 cuMemcpyHtoDAsync_v2:277 cuMemcpyHtoDAsync_v2_ptsz:421 cuMemcpyDtoHAsync_v2:279 \
            cuMemcpyDtoHAsync_v2_ptsz:422 cuMemcpyDtoDAsync_v2:281 cuMemcpyDtoDAsync_v2_ptsz:423 cuMemcpyPeer:318 cuMemcpyPeer_ptds:409 \
            cuMemcpyPeerAsync:319 cuMemcpyPeerAsync_ptsz:426 cuMemsetD8_v2:249 cuMemsetD8_v2_ptds:411 cuMemsetD32Async:220 \
            cuMemsetD32Async_ptsz:430 cuMemsetD2D8_v2:252 cuMemsetD2D32Async:226 cuMemcpy2D_v2:287 cuMemcpy2DUnaligned_v2:288 \
            cuMemcpy2DAsync_v2:289 cuMemcpy2DAsync_v2_ptsz:424 cuMemcpy3D_v2:290 cuMemcpy3DAsync_v2:291 cuMemcpy3DAsync_v2_ptsz:425; do
            echo "  ID(${p%%:*}, ${p#*:});"
        done
        echo '  return 0; }'
    } >"$w/abi.c"
    gcc -I"$inc" -I/usr/local/cuda/include -o "$w/abi" "$w/abi.c" && "$w/abi" | grep -v '^ok  '
    echo "(ids that match are not listed)"
}

# With CRASH_BT=1, a crash of the loop prints the crashing thread's name and native stack (and
# Python's faulthandler its Python stacks) into its output.
crash_bt() {
    cat >"$w/bt.c" <<'C'
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static void on_crash(int sig) {
    char name[64] = "?", path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", gettid());
    int fd = open(path, O_RDONLY);
    if (fd >= 0) { ssize_t n = read(fd, name, sizeof name - 1); name[n > 0 ? n : 0] = 0; close(fd); }
    dprintf(2, "crash_bt: signal %d in thread %d %s", sig, gettid(), name);
    void *frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    signal(sig, SIG_DFL);
    raise(sig);
}
__attribute__((constructor)) static void init(void) { signal(SIGSEGV, on_crash); signal(SIGBUS, on_crash); signal(SIGABRT, on_crash); }
C
    gcc -shared -fPIC -o "$w/libbt.so" "$w/bt.c"
}

# One attach to the loop: $1 names it; then LOOP_ENV (the loop's environment) and ATTACH_ENV
# (memshim attach's, which it passes on to the shim) as NAME=value words.
attach_once() {
    local name=$1
    local pre=()
    [ "${CRASH_BT:-0}" = 1 ] && pre=(LD_PRELOAD="$w/libbt.so")
    env "${pre[@]}" ${LOOP_ENV:-} SECONDS_TO_RUN=${LOOP_SECONDS:-24} python3 -X faulthandler examples/python/attach/torch_loop.py >"$w/$name.loop" 2>&1 &
    local loop=$!
    local pid=
    for _ in $(seq 600); do
        pid=$(sed -n 's/^torch_loop: ready pid //p' "$w/$name.loop")
        [ -n "$pid" ] && break
        sleep 0.1
    done
    sleep 5
    echo "== $name: CUPTI in the loop before attach: $(grep -o '[^ ]*libcupti[^ ]*' /proc/"$pid"/maps 2>/dev/null | sort -u | tr '\n' ' ')"
    env ${ATTACH_ENV:-} "$M" attach "$pid" --duration "${ATTACH_SECONDS:-8}" -o "$w/$name" 2>&1
    wait "$loop"
    local status=$?
    echo "loop status $status; $(grep -E 'torch_loop: (subscribed|done)' "$w/$name.loop" | tr '\n' ' ')"
    [ "$status" = 0 ] || grep -v -E '^(step|torch_loop)' "$w/$name.loop" | head -60
    "$M" report "$w/$name" >"$w/$name.txt" 2>&1
    "$M" report --format json "$w/$name" >"$w/$name.json" 2>&1
    python3 - "$w/$name.json" <<'PY' | tee "$w/$name.summary"
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
d, t = p["device"], p["transfers"]
print("device: seen", d.get("seen"), "allocations", d.get("allocations"), "frees", d.get("frees"), "live", d.get("live_bytes"), "peak", d.get("peak_bytes"))
for f in d.get("findings", []):
    print("  device finding", f["kind"], f.get("bytes"), ":", f["text"])
for r in t.get("summary", []):
    print("  transfers", r["direction"], r["host_memory"], r["count"], "copies", r["bytes"], "B")
PY
    echo "-- first screen"
    sed -n '1,/^== /p' "$w/$name.txt" | head -40
    echo "-- device and transfers"
    sed -n '/^device: /,/^counters: /p' "$w/$name.txt" | grep -v '^counters: ' | head -60
}

# With DIAGNOSE=1: the machine's kernel, memshim attach to a plain Python program and to one that
# imported PyTorch and sleeps, and afterwards a backtrace of every thread of each crashed loop's core
# (cores in /tmp/cores; cuda-gdb reads them, as the image has no gdb).
diagnose_start() {
    echo "== kernel $(uname -r); $(head -c 200 /proc/version)"
    mkdir -p /tmp/cores
    ulimit -c unlimited
    echo '/tmp/cores/core.%p' >/proc/sys/kernel/core_pattern 2>/dev/null || echo "(core_pattern not writable: $(cat /proc/sys/kernel/core_pattern))"
    (cd "$w" && python3 "$OLDPWD/examples/python/attach/attach_target.py" >plain.out 2>&1 & echo $! >"$w/plain.pid")
    sleep 1
    "$M" attach "$(cat "$w/plain.pid")" --duration 1 -o "$w/plain" 2>&1 | head -3
    touch "$w/stop"
    sleep 0.5
    echo "plain python: $(tr '\n' ' ' <"$w/plain.out")"
    python3 -c 'import torch, time, os; print("imported", os.getpid(), flush=True); time.sleep(6)' >"$w/idle.out" 2>&1 &
    local idle=$!
    sleep 4
    "$M" attach "$idle" --duration 1 -o "$w/idle" 2>&1 | head -3
    wait "$idle"
    echo "torch imported, idle: status $?; $(tr '\n' ' ' <"$w/idle.out")"
}

diagnose_end() {
    for core in /tmp/cores/core.*; do
        [ -e "$core" ] || continue
        echo "== $core ($(du -h "$core" | cut -f1))"
        cuda-gdb -batch -ex 'info threads' -ex 'thread apply all bt 12' "$(command -v python3)" "$core" 2>&1 |
            grep -v -E '^\[New LWP|^warning:|^$' | head -150
    done
}

{
    echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); kernel $(uname -r); $(python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)')"
    [ "${CRASH_BT:-0}" = 1 ] && crash_bt
    [ "${DIAGNOSE:-0}" = 1 ] && diagnose_start
    if [ -n "${VARIANTS:-}" ]; then
        # Named runs, one per word: NAME:LOOP_ENV:ATTACH_ENV, with commas for spaces.
        for v in $VARIANTS; do
            IFS=: read -r vname lenv aenv <<<"$v"
            LOOP_ENV=${lenv//,/ } ATTACH_ENV=${aenv//,/ } attach_once "$vname"
        done
        exit 0
    fi
    abi
    attach_once seen
    LOOP_ENV=HOLD_CUPTI=1 attach_once held
    [ "${DIAGNOSE:-0}" = 1 ] && diagnose_end
} 2>&1 | tee "$OUT/attach_torch.txt"
cp "$w"/seen.txt "$w"/held.txt "$OUT"/ 2>/dev/null
