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
 * - The callback API's driver-API domain: cuptiSubscribe (one subscriber at a time: a second gets
 *   CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 39), cuptiEnableCallback, cuptiEnableDomain,
 *   cuptiUnsubscribe and cuptiGetVersion. Subscribing registers a dispatch function with the stand-in
 *   driver (standin_set_cupti_hook in the libcuda.so.1 already loaded); the driver's memory calls and
 *   copies then call it at their entry and exit, and it calls the subscriber's callback with a
 *   CUpti_CallbackData (CUPTI's layout) for the ids enabled. standin_cupti_callbacks() counts them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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
         : result == 39 ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
         : result == 1 ? "CUPTI_ERROR_INVALID_PARAMETER"
         : result ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_SUCCESS";
    return 0;
}

/* --- the callback API ---------------------------------------------------------------------------- */
typedef void (*callback_fn)(void *userdata, int domain, uint32_t id, const void *data);
typedef struct {            /* CUpti_CallbackData */
    int site;               /* CUPTI_API_ENTER 0, CUPTI_API_EXIT 1 */
    const char *functionName;
    const void *functionParams;
    const void *functionReturnValue;
    const char *symbolName;
    void *context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} callback_data;
typedef void (*cupti_hook_t)(int exit, unsigned id, const char *name, const void *params,
                             unsigned long long *correlation, const int *result);

#define DOMAIN_DRIVER_API 1
#define MAX_ID 1024
static char g_subscriber;   /* the one subscriber's handle is its address */
static callback_fn volatile g_callback;
static void *volatile g_userdata;
static int g_subscribed, g_domain_on;
static unsigned char g_enabled_ids[MAX_ID];
static unsigned g_correlation;
static unsigned long long g_callbacks;

static void dispatch(int exit, unsigned id, const char *name, const void *params,
                     unsigned long long *correlation, const int *result) {
    callback_fn cb = __atomic_load_n(&g_callback, __ATOMIC_ACQUIRE);
    if (!cb || id >= MAX_ID || !(g_domain_on || __atomic_load_n(&g_enabled_ids[id], __ATOMIC_RELAXED))) return;
    callback_data d = {exit, name, params, result, 0, 0, 1, (uint64_t *)correlation,
                       __atomic_add_fetch(&g_correlation, exit ? 0 : 1, __ATOMIC_RELAXED)};
    __atomic_fetch_add(&g_callbacks, 1, __ATOMIC_RELAXED);
    cb(g_userdata, DOMAIN_DRIVER_API, id, &d);
}
/* The driver's registration point, in the libcuda.so.1 the process has loaded (0 if none). */
static int driver_hook(cupti_hook_t hook) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void (*set)(cupti_hook_t) = h ? (void (*)(cupti_hook_t))dlsym(h, "standin_set_cupti_hook") : 0;
    if (set) set(hook);
    if (h) dlclose(h);
    return set != 0;
}
int cuptiSubscribe(void **subscriber, callback_fn callback, void *userdata) {
    if (!subscriber || !callback) return 1;
    lock();
    if (g_subscribed) { unlock(); return 39; }
    g_subscribed = 1, g_domain_on = 0;
    memset(g_enabled_ids, 0, sizeof g_enabled_ids);
    g_userdata = userdata;
    __atomic_store_n(&g_callback, callback, __ATOMIC_RELEASE);
    unlock();
    driver_hook(dispatch);
    *subscriber = &g_subscriber;
    return 0;
}
int cuptiUnsubscribe(void *subscriber) {
    if (subscriber != &g_subscriber) return 1;
    lock();
    int was = g_subscribed;
    g_subscribed = 0;
    __atomic_store_n(&g_callback, (callback_fn)0, __ATOMIC_RELEASE);
    unlock();
    if (was) driver_hook(0);
    return was ? 0 : 1;
}
int cuptiEnableCallback(uint32_t enable, void *subscriber, int domain, uint32_t id) {
    if (subscriber != &g_subscriber || !g_subscribed || domain != DOMAIN_DRIVER_API || !id || id >= MAX_ID) return 1;
    __atomic_store_n(&g_enabled_ids[id], enable != 0, __ATOMIC_RELAXED);
    return 0;
}
int cuptiEnableDomain(uint32_t enable, void *subscriber, int domain) {
    if (subscriber != &g_subscriber || !g_subscribed || domain != DOMAIN_DRIVER_API) return 1;
    g_domain_on = enable != 0;
    return 0;
}
int cuptiGetVersion(uint32_t *version) {
    if (!version) return 1;
    *version = 130001;
    return 0;
}
unsigned long long standin_cupti_callbacks(void) { return __atomic_load_n(&g_callbacks, __ATOMIC_RELAXED); }

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
