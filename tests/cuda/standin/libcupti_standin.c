/* libcupti_standin.c - a stand-in for CUPTI's activity API (libcupti.so), enough for memshim's
 * unified-memory counters on machines without a GPU.
 *
 * Build: cc -shared -fPIC -O1 -g -o DIR/libcupti.so libcupti_standin.c (tests/cuda/build.sh does).
 *
 * - cuptiActivityConfigureUnifiedMemoryCounter, cuptiActivityRegisterCallbacks, cuptiActivityEnable,
 *   cuptiActivityFlushAll, cuptiActivityGetNextRecord and cuptiGetResultString, with CUPTI 13's ABI.
 *   Configuring remote-map (7) or device-to-device (8) counters fails with
 *   CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED (28), as on some GPUs, so the caller's fallback to fewer
 *   kinds is exercised.
 * - Records exist only when a test program injects them: standin_um_event(counter kind, address,
 *   value, src, dst) queues one CUpti_ActivityUnifiedMemoryCounter2 (64 bytes, activity kind 25)
 *   while the kind is enabled and configured; the next flush hands them all back in one buffer
 *   requested from the registered callback. The program reaches the hook by dlopen("libcupti.so")
 *   itself (the same library the profiler loaded).
 * - No malloc: static storage and a spin lock. standin_cupti_flushes() counts flushes that delivered.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <string.h>

typedef void (*request_fn)(uint8_t **, size_t *, size_t *);
typedef void (*complete_fn)(void *, uint32_t, uint8_t *, size_t, size_t);
typedef struct { uint32_t scope, kind, device_id, enable; } um_config;
typedef struct {
    uint32_t kind, counter_kind;
    uint64_t value, start, end, address;
    uint32_t src, dst, stream, pid, flags, pad;
} um_record;

#define MAX_PENDING 4096
static volatile int g_lock;
static request_fn g_request;
static complete_fn g_complete;
static int g_enabled, g_configured[16];
static um_record g_pending[MAX_PENDING];
static unsigned g_npending, g_flushes;
static uint64_t g_clock;

static void lock(void) { while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) sched_yield(); }
static void unlock(void) { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

int cuptiActivityConfigureUnifiedMemoryCounter(um_config *config, uint32_t count) {
    if (!config || !count) return 1;
    for (uint32_t i = 0; i < count; i++)
        if (config[i].kind == 7 || config[i].kind == 8) return 28;
    for (uint32_t i = 0; i < count; i++)
        if (config[i].kind < 16) g_configured[config[i].kind] = config[i].enable != 0;
    return 0;
}
int cuptiActivityRegisterCallbacks(request_fn req, complete_fn comp) {
    if (!req || !comp) return 1;
    g_request = req, g_complete = comp;
    return 0;
}
int cuptiActivityEnable(uint32_t kind) {
    if (kind != 25) return 1;
    g_enabled = 1;
    return 0;
}
int cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    lock();
    if (!g_npending || !g_request || !g_complete) { unlock(); return 0; }
    uint8_t *buf = 0;
    size_t size = 0, max = 0;
    g_request(&buf, &size, &max);
    size_t n = buf ? size / sizeof(um_record) : 0;
    if (n > g_npending) n = g_npending;
    if (n) memcpy(buf, g_pending, n * sizeof(um_record));
    memmove(g_pending, g_pending + n, (g_npending - n) * sizeof(um_record));
    g_npending -= (unsigned)n;
    g_flushes++;
    unlock();
    if (buf) g_complete(0, 0, buf, size, n * sizeof(um_record));
    return 0;
}
int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, uint8_t **record) {
    if (!buffer || !record) return 1;
    uint8_t *next = *record ? *record + sizeof(um_record) : buffer;
    if (next + sizeof(um_record) > buffer + valid) return 12; /* CUPTI_ERROR_MAX_LIMIT_REACHED */
    *record = next;
    return 0;
}
int cuptiGetResultString(int result, const char **str) {
    if (!str) return 1;
    *str = result == 28 ? "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED" : result == 12 ? "CUPTI_ERROR_MAX_LIMIT_REACHED"
         : result ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_SUCCESS";
    return 0;
}

/* Test hook: queue one unified-memory record. Returns 0 when queued, 1 when counters are off. */
int standin_um_event(uint32_t counter_kind, uint64_t address, uint64_t value, uint32_t src, uint32_t dst) {
    lock();
    int ok = g_enabled && counter_kind < 16 && g_configured[counter_kind] && g_npending < MAX_PENDING;
    if (ok) {
        um_record r = {25, counter_kind, value, g_clock, g_clock + 1000, address, src, dst, 0, 0, 0, 0};
        g_clock += 2000;
        g_pending[g_npending++] = r;
    }
    unlock();
    return ok ? 0 : 1;
}
unsigned standin_cupti_flushes(void) { return __atomic_load_n(&g_flushes, __ATOMIC_RELAXED); }
