#!/usr/bin/env bash
# Where CUPTI is on the GPU machine and the ABI facts memshim's unified-memory counters rely on: the
# library's paths, and the sizes, offsets and enum values of the unified-memory activity record and
# its counter configuration, printed by a program compiled against the installed headers.
#   OUT=/some/dir bash scripts/h200/cupti_probe.sh
set -u
OUT=${OUT:-/tmp/memshim-h200}
mkdir -p "$OUT"
w=/tmp/memshim-cupti && rm -rf "$w" && mkdir -p "$w"
{
    echo "== libcupti"
    find / -xdev \( -name 'libcupti.so*' -o -name cupti_activity.h \) 2>/dev/null | grep -v '^/proc' | head -12
    inc=$(dirname "$(find / -xdev -name cupti_activity.h 2>/dev/null | head -1)")
    cat > "$w/probe.c" <<'C'
#include <stddef.h>
#include <stdio.h>
#include <cupti.h>
#define OFF(t, f) printf("  %-28s offset %zu size %zu\n", #f, offsetof(t, f), sizeof(((t *)0)->f))
int main(void) {
    printf("CUPTI_API_VERSION %d\n", CUPTI_API_VERSION);
    printf("CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER %d\n", CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
    printf("counter kinds: HTOD %d DTOH %d CPU_PAGE_FAULT %d GPU_PAGE_FAULT %d THRASHING %d THROTTLING %d REMOTE_MAP %d DTOD %d\n",
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD);
    printf("scope PROCESS_SINGLE_DEVICE %d PROCESS_ALL_DEVICES %d\n",
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_ALL_DEVICES);
    printf("CUpti_ActivityUnifiedMemoryCounterConfig size %zu\n", sizeof(CUpti_ActivityUnifiedMemoryCounterConfig));
    OFF(CUpti_ActivityUnifiedMemoryCounterConfig, scope);
    OFF(CUpti_ActivityUnifiedMemoryCounterConfig, kind);
    OFF(CUpti_ActivityUnifiedMemoryCounterConfig, deviceId);
    OFF(CUpti_ActivityUnifiedMemoryCounterConfig, enable);
    printf("CUpti_ActivityUnifiedMemoryCounter2 size %zu\n", sizeof(CUpti_ActivityUnifiedMemoryCounter2));
    OFF(CUpti_ActivityUnifiedMemoryCounter2, kind);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, counterKind);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, value);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, start);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, end);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, address);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, srcId);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, dstId);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, streamId);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, processId);
    OFF(CUpti_ActivityUnifiedMemoryCounter2, flags);
    printf("CUPTI_ERROR_NOT_INITIALIZED %d CUPTI_ERROR_MAX_LIMIT_REACHED %d CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED %d CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED %d\n",
           CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
           CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED);
    return 0;
}
C
    echo "== headers in $inc"
    nvcc -I"$inc" -o "$w/probe" "$w/probe.c" && "$w/probe"
    grep -n "cuptiActivityConfigureUnifiedMemoryCounter\|cuptiActivityRegisterCallbacks\|cuptiActivityFlushAll\|cuptiActivityGetNextRecord\|cuptiActivityEnable(" "$inc"/cupti_activity.h | head -10
    grep -n "typedef void (CUPTIAPI \*CUpti_Buffer" -A3 "$inc"/cupti_activity.h | head -10
} > "$OUT/cupti_probe.txt" 2>&1
cat "$OUT/cupti_probe.txt"
