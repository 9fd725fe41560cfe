/* libcuda_standin.c - a stand-in for the CUDA driver (libcuda.so.1) for machines without a GPU.
 *
 * Build: cc -shared -fPIC -O1 -g -o DIR/libcuda.so.1 libcuda_standin.c && ln -sf libcuda.so.1 DIR/libcuda.so
 * (tests/cuda/build.sh does this).
 *
 * - Same ABI as the real driver for the functions in standin_functions.h (NAMES): every one returns CUresult
 *   (0 success, 1 INVALID_VALUE, 2 OUT_OF_MEMORY, 3 NOT_INITIALIZED, 101 INVALID_DEVICE,
 *   208 ALREADY_MAPPED, 500 NOT_FOUND, 712/713 host memory (not) registered).
 * - Never allocates through the PLT (no malloc/calloc/free/mmap calls a preloaded profiler could see):
 *   device, managed and pinned memory all come from one 4 GiB MAP_NORESERVE arena made with
 *   syscall(SYS_mmap); bookkeeping lives in static arrays; no thread-local storage (a dlopen'ed
 *   library's TLS is malloc'ed by ld.so).
 * - Device pointers are real addresses in that arena, so copies really copy (memmove). Freed ranges go
 *   back to a first-fit free list (addresses are reused, as on a real GPU) and are madvise'd away.
 * - Capacity: STANDIN_CUDA_MEM_BYTES (bytes, optional K/M/G suffix; default 80 GiB), read by cuInit.
 *   Live bytes = device + managed allocations + cuMemCreate handles (pinned host memory is not
 *   counted); an allocation that would take live bytes past the capacity fails with 2.
 * - Exported functions are aliases of static implementations, and cuGetProcAddress hands out those
 *   very addresses, so dlsym(h, "cuMemAlloc_v2") == cuGetProcAddress("cuMemAlloc") even when a
 *   preloaded library exports the same names.
 * - Asynchronous copies take virtual time on their stream's clock (64 bytes/ns device to device, 16
 *   with pinned or registered host memory, 4 with pageable), which events recorded on the stream read:
 *   cuEventElapsedTime around an async copy gives exactly its size over that rate. A stream capture in
 *   global mode makes every event call a violation (see standin_functions.h, events).
 * - CUPTI's driver-API callbacks: the memory calls and copies call a subscribed tool back at their
 *   entry and exit, through the stand-in libcupti (see standin_cupti_calls.h).
 * - Extra exports for tests: standin_call_count("cuMemAlloc_v2"), standin_live_bytes(),
 *   standin_capture_violations(), and standin_set_cupti_hook() for the stand-in libcupti.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef unsigned long long u64;
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { int type, id; } CUmemLocation;
typedef struct { int type, requestedHandleTypes; CUmemLocation location; void *win32HandleMetaData;
                 unsigned char allocFlags[8]; } CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;

enum { OK = 0, EINVAL_ = 1, EOOM = 2, ENOINIT = 3, EDEVICE = 101, EHANDLE = 400, EMAPPED = 208,
       ENOTFOUND = 500, EREGISTERED = 712, ENOTREGISTERED = 713 };
enum { K_DEVICE = 1, K_MANAGED = 2, K_PINNED = 4 };

#define ARENA_BYTES (4ull << 30)
#define ALIGN 512ull
#define GRAN (2ull << 20)          /* VMM granularity */
#define REC_CAP (1u << 18)         /* live device/managed/pinned allocations (hash table) */
#define FREE_CAP 65536             /* free ranges */
#define SMALL_CAP 4096             /* reservations, handles, mappings, host registrations */
#define HANDLE_TAG 0xC0DE000000000000ull

/* --- global state, all static ----------------------------------------------------------------- */
static volatile int g_lock;
static int g_inited;
static u64 g_arena, g_capacity, g_live;
typedef struct { u64 addr, size, span; int kind; } rec_t;
static rec_t g_recs[REC_CAP];
static unsigned g_nrecs;
static struct { u64 start, len; } g_free[FREE_CAP];
static int g_nfree;
static struct { u64 start, size; } g_resv[SMALL_CAP], g_reg[SMALL_CAP];
static struct { u64 size; int live, released, maps; } g_handles[SMALL_CAP];
static struct { u64 va, size; int h; } g_maps[SMALL_CAP];
static char g_ctx, g_pool, g_streams[SMALL_CAP];
static unsigned g_nstreams;
static void *volatile g_current_ctx;

static void lock(void) {
    while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void unlock(void) { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

/* --- arena: sorted, coalescing first-fit free list --------------------------------------------- */
static void free_insert(int i, u64 start, u64 len) {
    if (g_nfree == FREE_CAP) return; /* list full: the range is lost, never reused (still freed) */
    memmove(&g_free[i + 1], &g_free[i], (size_t)(g_nfree - i) * sizeof g_free[0]);
    g_free[i].start = start, g_free[i].len = len, g_nfree++;
}
static void free_remove(int i) {
    memmove(&g_free[i], &g_free[i + 1], (size_t)(g_nfree - i - 1) * sizeof g_free[0]);
    g_nfree--;
}
static u64 range_alloc(u64 size, u64 align) {
    for (int i = 0; i < g_nfree; i++) {
        u64 s = g_free[i].start, e = s + g_free[i].len, a = (s + align - 1) & ~(align - 1);
        if (a > e || e - a < size) continue;
        if (a > s) g_free[i].len = a - s, i++; /* keep the front part free */
        else free_remove(i);
        if (a + size < e) free_insert(i, a + size, e - a - size);
        return a;
    }
    return 0;
}
static void range_free(u64 start, u64 len) {
    u64 lo = (start + 4095) & ~4095ull, hi = (start + len) & ~4095ull;
    if (hi > lo) syscall(SYS_madvise, (void *)lo, (size_t)(hi - lo), MADV_DONTNEED);
    int i = 0;
    while (i < g_nfree && g_free[i].start < start) i++;
    if (i > 0 && g_free[i - 1].start + g_free[i - 1].len == start) {
        g_free[i - 1].len += len;
        if (i < g_nfree && start + len == g_free[i].start) g_free[i - 1].len += g_free[i].len, free_remove(i);
    } else if (i < g_nfree && start + len == g_free[i].start) {
        g_free[i].start = start, g_free[i].len += len;
    } else {
        free_insert(i, start, len);
    }
}

/* --- live allocations: open addressing, linear probing, backward-shift deletion ------------------ */
static unsigned rec_slot(u64 a) { return (unsigned)(((a >> 9) * 0x9E3779B97F4A7C15ull) >> 46) & (REC_CAP - 1); }
static int rec_find(u64 a) {
    for (unsigned i = rec_slot(a);; i = (i + 1) & (REC_CAP - 1)) {
        if (g_recs[i].addr == a) return (int)i;
        if (!g_recs[i].addr) return -1;
    }
}
static void rec_del(unsigned i) {
    for (unsigned j = i;;) {
        j = (j + 1) & (REC_CAP - 1);
        if (!g_recs[j].addr) break;
        unsigned k = rec_slot(g_recs[j].addr);
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
        g_recs[i] = g_recs[j], i = j;
    }
    g_recs[i].addr = 0, g_nrecs--;
}

/* --- common allocation paths ------------------------------------------------------------------- */
static int over_capacity(u64 size) { return size > g_capacity || g_live > g_capacity - size; }

static CUresult mem_alloc(u64 *out, u64 size, int kind) {
    if (!out) return EINVAL_;
    *out = 0;
    if (!size) return EINVAL_;
    if (!__atomic_load_n(&g_inited, __ATOMIC_ACQUIRE)) return ENOINIT;
    u64 span = (size + ALIGN - 1) & ~(ALIGN - 1), a;
    lock();
    if ((kind != K_PINNED && over_capacity(size)) || g_nrecs >= REC_CAP / 4 * 3 || !(a = range_alloc(span, ALIGN))) {
        unlock();
        return EOOM;
    }
    unsigned i = rec_slot(a);
    while (g_recs[i].addr) i = (i + 1) & (REC_CAP - 1);
    g_recs[i] = (rec_t){a, size, span, kind}, g_nrecs++;
    if (kind != K_PINNED) g_live += size;
    unlock();
    *out = a;
    return OK;
}
static CUresult mem_free(u64 a, int kinds) {
    if (!__atomic_load_n(&g_inited, __ATOMIC_ACQUIRE)) return ENOINIT;
    if (!a) return OK;
    lock();
    int i = rec_find(a);
    if (i < 0 || !(g_recs[i].kind & kinds)) { unlock(); return EINVAL_; }
    if (g_recs[i].kind != K_PINNED) g_live -= g_recs[i].size;
    range_free(a, g_recs[i].span);
    rec_del((unsigned)i);
    unlock();
    return OK;
}
static CUresult copy(u64 dst, u64 src, size_t n) {
    if (!__atomic_load_n(&g_inited, __ATOMIC_ACQUIRE)) return ENOINIT;
    if (!n) return OK;
    if (!dst || !src) return EINVAL_;
    memmove((void *)dst, (const void *)src, n);
    return OK;
}
static int in_arena(u64 a, u64 n) { return a >= g_arena && n <= ARENA_BYTES && a - g_arena <= ARENA_BYTES - n; }

/* --- VMM helpers (called with the lock held) ------------------------------------------------------ */
static int handle_index(CUmemGenericAllocationHandle h) {
    u64 i = (h & ~HANDLE_TAG) - 1;
    return (h & HANDLE_TAG) == HANDLE_TAG && i < SMALL_CAP && g_handles[i].live ? (int)i : -1;
}
static void handle_drop_if_done(int h) {
    if (g_handles[h].released && !g_handles[h].maps) g_live -= g_handles[h].size, g_handles[h].live = 0;
}
static int unmap_range(u64 va, u64 size) { /* removes the mappings inside; returns how many */
    int n = 0;
    for (int i = 0; i < SMALL_CAP; i++)
        if (g_maps[i].size && g_maps[i].va >= va && g_maps[i].va + g_maps[i].size <= va + size) {
            int h = g_maps[i].h;
            g_maps[i].size = 0, g_handles[h].maps--, n++;
            handle_drop_if_done(h);
        }
    return n;
}
static int find_resv(u64 va, u64 size) { /* the reservation that holds [va, va+size) */
    for (int i = 0; i < SMALL_CAP; i++)
        if (g_resv[i].size && va >= g_resv[i].start && va + size <= g_resv[i].start + g_resv[i].size) return i;
    return -1;
}

static u64 parse_bytes(const char *s, u64 dflt) {
    char *end;
    if (!s || !*s) return dflt;
    u64 v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    case 0: break;
    default: return dflt;
    }
    return v;
}

#include "standin_functions.h"   /* the entry points */
#include "standin_cupti_calls.h" /* CUPTI's callbacks around the memory calls and copies */
#include "standin_procs.h"       /* cuGetProcAddress and the exports */
