/* standin_functions.h - the driver entry points of libcuda_standin.c (included once, near its end).
 *
 * Each entry point is `static CUresult i_NAME(...)`; standin_procs.h exports it as NAME through an
 * alias and lists it by its base name in the cuGetProcAddress table. NAMES is every exported symbol.
 * The memory calls and copies CUPTI reports are written here as `b_NAME`; standin_cupti_calls.h
 * makes their `i_NAME`, which calls CUPTI's callbacks around them.
 */
#define NAMES(X)                                                                                     \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)             \
    X(cuDeviceTotalMem_v2)                                                                           \
    X(cuDeviceGetDefaultMemPool) X(cuCtxGetDevice) X(cuCtxGetCurrent) X(cuDevicePrimaryCtxRetain)      \
    X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxGetState) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuStreamCreate)          \
    X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz)                         \
    X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemAllocAsync)                   \
    X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFree_v2) \
    X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemHostAlloc) X(cuMemAllocHost_v2) X(cuMemFreeHost)  \
    X(cuMemHostRegister_v2) X(cuMemHostUnregister) X(cuMemGetInfo_v2)                                \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate) X(cuMemRelease) X(cuMemMap)             \
    X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAllocationGranularity)                                 \
    X(cuMemPrefetchAsync) X(cuMemPrefetchAsync_v2) X(cuMemAdvise) X(cuMemAdvise_v2)                   \
    X(cuMemcpy) X(cuMemcpy_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz)                             \
    X(cuMemcpyHtoD_v2) X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoH_v2_ptds)             \
    X(cuMemcpyDtoD_v2) X(cuMemcpyDtoD_v2_ptds) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoDAsync_v2_ptsz)   \
    X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoHAsync_v2_ptsz) X(cuMemcpyDtoDAsync_v2)                     \
    X(cuMemcpyDtoDAsync_v2_ptsz) X(cuGetProcAddress) X(cuGetProcAddress_v2)                         \
    X(cuMemcpyPeer) X(cuMemcpyPeer_ptds) X(cuMemcpyPeerAsync) X(cuMemcpyPeerAsync_ptsz)               \
    X(cuMemsetD8_v2) X(cuMemsetD8_v2_ptds) X(cuMemsetD16_v2) X(cuMemsetD16_v2_ptds)                   \
    X(cuMemsetD32_v2) X(cuMemsetD32_v2_ptds) X(cuMemsetD8Async) X(cuMemsetD8Async_ptsz)               \
    X(cuMemsetD16Async) X(cuMemsetD16Async_ptsz) X(cuMemsetD32Async) X(cuMemsetD32Async_ptsz)         \
    X(cuMemcpy2D_v2) X(cuMemcpy2D_v2_ptds) X(cuMemcpy2DUnaligned_v2) X(cuMemcpy2DUnaligned_v2_ptds)   \
    X(cuMemcpy2DAsync_v2) X(cuMemcpy2DAsync_v2_ptsz) X(cuMemcpy3D_v2) X(cuMemcpy3D_v2_ptds)           \
    X(cuMemcpy3DAsync_v2) X(cuMemcpy3DAsync_v2_ptsz)                                                \
    X(cuEventCreate) X(cuEventDestroy_v2) X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventQuery)     \
    X(cuEventElapsedTime) X(cuStreamBeginCapture_v2) X(cuStreamEndCapture) X(cuStreamIsCapturing)    \
    X(cuMemsetD2D8_v2) X(cuMemsetD2D8_v2_ptds) X(cuMemsetD2D32Async) X(cuMemsetD2D32Async_ptsz)

#define ID(n) ID_##n,
enum { NAMES(ID) ID_COUNT };
#define STR(n) #n,
static const char *const g_names[] = {NAMES(STR)};
static unsigned long long g_calls[ID_COUNT];
#define HIT(n) __atomic_fetch_add(&g_calls[ID_##n], 1, __ATOMIC_RELAXED)
#define INITED() __atomic_load_n(&g_inited, __ATOMIC_ACQUIRE)
#define NEED_INIT() do { if (!INITED()) return ENOINIT; } while (0)

/* --- init, device, context, stream -------------------------------------------------------------- */
static CUresult i_cuInit(unsigned flags) {
    HIT(cuInit);
    if (flags) return EINVAL_;
    lock();
    if (!g_arena) {
        long a = syscall(SYS_mmap, (void *)0, (size_t)ARENA_BYTES, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0L);
        if (a == -1 || !a) { unlock(); return EOOM; }
        g_arena = (u64)a, g_free[0].start = g_arena, g_free[0].len = ARENA_BYTES, g_nfree = 1;
        g_capacity = parse_bytes(getenv("STANDIN_CUDA_MEM_BYTES"), 80ull << 30);
        __atomic_store_n(&g_inited, 1, __ATOMIC_RELEASE);
    }
    unlock();
    return OK;
}
static CUresult i_cuDriverGetVersion(int *v) { HIT(cuDriverGetVersion); if (!v) return EINVAL_; *v = 13000; return OK; }
static CUresult i_cuDeviceGet(CUdevice *d, int ordinal) {
    HIT(cuDeviceGet); NEED_INIT();
    if (!d) return EINVAL_;
    if (ordinal != 0) return EDEVICE;
    *d = 0;
    return OK;
}
static CUresult i_cuDeviceGetCount(int *n) { HIT(cuDeviceGetCount); NEED_INIT(); if (!n) return EINVAL_; *n = 1; return OK; }
static CUresult i_cuDeviceGetName(char *name, int len, CUdevice d) {
    static const char standin[] = "memshim stand-in device";
    HIT(cuDeviceGetName); NEED_INIT();
    if (!name || len <= 0 || d != 0) return EINVAL_;
    int n = (int)sizeof standin < len ? (int)sizeof standin : len;
    memmove(name, standin, (size_t)n);
    name[n - 1] = 0;
    return OK;
}
static CUresult i_cuDeviceTotalMem_v2(size_t *b, CUdevice d) {
    HIT(cuDeviceTotalMem_v2); NEED_INIT();
    if (!b) return EINVAL_;
    if (d) return EDEVICE;
    *b = g_capacity;
    return OK;
}
static CUresult i_cuDeviceGetDefaultMemPool(CUmemoryPool *p, CUdevice d) {
    HIT(cuDeviceGetDefaultMemPool); NEED_INIT();
    if (!p) return EINVAL_;
    if (d) return EDEVICE;
    *p = &g_pool;
    return OK;
}
static CUresult i_cuCtxGetDevice(CUdevice *d) { HIT(cuCtxGetDevice); NEED_INIT(); if (!d) return EINVAL_; *d = 0; return OK; }
static CUresult i_cuCtxGetCurrent(CUcontext *c) { HIT(cuCtxGetCurrent); NEED_INIT(); if (!c) return EINVAL_; *c = g_current_ctx; return OK; }
static CUresult i_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    HIT(cuDevicePrimaryCtxRetain); NEED_INIT();
    if (!c) return EINVAL_;
    if (d) return EDEVICE;
    *c = &g_ctx;
    return OK;
}
static CUresult i_cuDevicePrimaryCtxRelease_v2(CUdevice d) { HIT(cuDevicePrimaryCtxRelease_v2); NEED_INIT(); return d ? EDEVICE : OK; }
/* Active once retained (the stand-in never destroys its one context). */
static CUresult i_cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active) {
    HIT(cuDevicePrimaryCtxGetState); NEED_INIT();
    if (!flags || !active) return EINVAL_;
    if (d) return EDEVICE;
    *flags = 0, *active = __atomic_load_n(&g_calls[ID_cuDevicePrimaryCtxRetain], __ATOMIC_RELAXED) > 0;
    return OK;
}
/* One context and one "current" for the process (not per thread): a push makes it current, a pop
 * puts back what was current before the push. */
static void *volatile g_before_push;
static CUresult i_cuCtxPushCurrent_v2(CUcontext c) {
    HIT(cuCtxPushCurrent_v2); NEED_INIT();
    if (c != &g_ctx) return EINVAL_;
    g_before_push = g_current_ctx, g_current_ctx = c;
    return OK;
}
static CUresult i_cuCtxPopCurrent_v2(CUcontext *c) {
    HIT(cuCtxPopCurrent_v2); NEED_INIT();
    if (c) *c = g_current_ctx;
    g_current_ctx = g_before_push;
    return OK;
}
static CUresult i_cuCtxSetCurrent(CUcontext c) {
    HIT(cuCtxSetCurrent); NEED_INIT();
    if (c && c != &g_ctx) return EINVAL_;
    g_current_ctx = c;
    return OK;
}
static CUresult i_cuCtxSynchronize(void) { HIT(cuCtxSynchronize); NEED_INIT(); return OK; }
static CUresult i_cuStreamCreate(CUstream *s, unsigned flags) {
    HIT(cuStreamCreate); NEED_INIT();
    if (!s || flags > 1) return EINVAL_;
    *s = &g_streams[__atomic_fetch_add(&g_nstreams, 1, __ATOMIC_RELAXED) % SMALL_CAP];
    return OK;
}
static CUresult i_cuStreamDestroy_v2(CUstream s) { HIT(cuStreamDestroy_v2); NEED_INIT(); return s ? OK : EINVAL_; }
static CUresult i_cuStreamSynchronize(CUstream s) { HIT(cuStreamSynchronize); (void)s; NEED_INIT(); return OK; }
static CUresult i_cuStreamSynchronize_ptsz(CUstream s) { HIT(cuStreamSynchronize_ptsz); (void)s; NEED_INIT(); return OK; }

/* --- allocation ------------------------------------------------------------------------------------ */
static CUresult b_cuMemAlloc_v2(CUdeviceptr *p, size_t n) { HIT(cuMemAlloc_v2); return mem_alloc(p, n, K_DEVICE); }
static CUresult b_cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height, unsigned elem) {
    HIT(cuMemAllocPitch_v2);
    if (!pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16)) return EINVAL_;
    size_t rounded = (width + 511) & ~(size_t)511;
    CUresult r = mem_alloc(p, (u64)rounded * height, K_DEVICE);
    if (r == OK) *pitch = rounded;
    return r;
}
static CUresult b_cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
    HIT(cuMemAllocManaged);
    return flags == 1 || flags == 2 ? mem_alloc(p, n, K_MANAGED) : EINVAL_;
}
static CUresult b_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { HIT(cuMemAllocAsync); (void)s; return mem_alloc(p, n, K_DEVICE); }
static CUresult b_cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) { HIT(cuMemAllocAsync_ptsz); (void)s; return mem_alloc(p, n, K_DEVICE); }
static CUresult b_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
    HIT(cuMemAllocFromPoolAsync); (void)s;
    return pool ? mem_alloc(p, n, K_DEVICE) : EINVAL_;
}
static CUresult b_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
    HIT(cuMemAllocFromPoolAsync_ptsz); (void)s;
    return pool ? mem_alloc(p, n, K_DEVICE) : EINVAL_;
}
static CUresult b_cuMemFree_v2(CUdeviceptr p) { HIT(cuMemFree_v2); return mem_free(p, K_DEVICE | K_MANAGED); }
static CUresult b_cuMemFreeAsync(CUdeviceptr p, CUstream s) { HIT(cuMemFreeAsync); (void)s; return mem_free(p, K_DEVICE | K_MANAGED); }
static CUresult b_cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { HIT(cuMemFreeAsync_ptsz); (void)s; return mem_free(p, K_DEVICE | K_MANAGED); }
static CUresult host_alloc(void **p, size_t n) {
    u64 a = 0;
    CUresult r = p ? mem_alloc(&a, n, K_PINNED) : EINVAL_;
    if (p) *p = (void *)a;
    return r;
}
static CUresult b_cuMemHostAlloc(void **p, size_t n, unsigned flags) { HIT(cuMemHostAlloc); return flags <= 7 ? host_alloc(p, n) : EINVAL_; }
static CUresult b_cuMemAllocHost_v2(void **p, size_t n) { HIT(cuMemAllocHost_v2); return host_alloc(p, n); }
static CUresult b_cuMemFreeHost(void *p) { HIT(cuMemFreeHost); return p ? mem_free((u64)p, K_PINNED) : EINVAL_; }
static CUresult b_cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
    HIT(cuMemHostRegister_v2); NEED_INIT();
    u64 a = (u64)p;
    if (!p || !n || flags > 15) return EINVAL_;
    CUresult r = EOOM;
    lock();
    for (int i = 0; i < SMALL_CAP; i++)
        if (g_reg[i].size && a < g_reg[i].start + g_reg[i].size && g_reg[i].start < a + n) { r = EREGISTERED; break; }
    for (int i = 0; r == EOOM && i < SMALL_CAP; i++)
        if (!g_reg[i].size) g_reg[i].start = a, g_reg[i].size = n, r = OK;
    unlock();
    return r;
}
static CUresult b_cuMemHostUnregister(void *p) {
    HIT(cuMemHostUnregister); NEED_INIT();
    CUresult r = ENOTREGISTERED;
    lock();
    for (int i = 0; p && i < SMALL_CAP; i++)
        if (g_reg[i].size && g_reg[i].start == (u64)p) g_reg[i].size = 0, r = OK;
    unlock();
    return r;
}
static CUresult b_cuMemGetInfo_v2(size_t *free_b, size_t *total) {
    HIT(cuMemGetInfo_v2); NEED_INIT();
    if (!free_b || !total) return EINVAL_;
    lock();
    *free_b = g_live < g_capacity ? g_capacity - g_live : 0, *total = g_capacity;
    unlock();
    return OK;
}

/* --- virtual memory management --------------------------------------------------------------------- */
static CUresult b_cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr hint, unsigned long long flags) {
    HIT(cuMemAddressReserve); NEED_INIT(); (void)hint;
    if (!p || !n || n % GRAN || flags || (align & (align - 1))) return EINVAL_;
    CUresult r = EOOM;
    lock();
    for (int i = 0; i < SMALL_CAP; i++)
        if (!g_resv[i].size) {
            u64 a = range_alloc(n, align > GRAN ? align : GRAN);
            if (a) g_resv[i].start = *p = a, g_resv[i].size = n, r = OK;
            break;
        }
    unlock();
    return r;
}
static CUresult b_cuMemAddressFree(CUdeviceptr p, size_t n) {
    HIT(cuMemAddressFree); NEED_INIT();
    CUresult r = EINVAL_;
    lock();
    for (int i = 0; i < SMALL_CAP; i++)
        if (g_resv[i].size && g_resv[i].start == p && g_resv[i].size == n) {
            unmap_range(p, n);
            range_free(p, n), g_resv[i].size = 0, r = OK;
            break;
        }
    unlock();
    return r;
}
static CUresult b_cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop, unsigned long long flags) {
    HIT(cuMemCreate); NEED_INIT();
    if (!h || !prop || !n || n % GRAN || flags || prop->type != 1 || prop->location.type != 1) return EINVAL_;
    if (prop->location.id != 0) return EDEVICE;
    CUresult r = EOOM;
    lock();
    for (int i = 0; !over_capacity(n) && i < SMALL_CAP; i++)
        if (!g_handles[i].live) {
            g_handles[i].size = n, g_handles[i].live = 1, g_handles[i].released = g_handles[i].maps = 0;
            g_live += n, *h = HANDLE_TAG | (u64)(i + 1), r = OK;
            break;
        }
    unlock();
    return r;
}
static CUresult b_cuMemRelease(CUmemGenericAllocationHandle h) {
    HIT(cuMemRelease); NEED_INIT();
    lock();
    int i = handle_index(h);
    if (i >= 0 && !g_handles[i].released) g_handles[i].released = 1, handle_drop_if_done(i);
    unlock();
    return i >= 0 ? OK : EINVAL_;
}
static CUresult b_cuMemMap(CUdeviceptr p, size_t n, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags) {
    HIT(cuMemMap); NEED_INIT();
    if (!n || n % GRAN || p % GRAN || offset || flags) return EINVAL_;
    CUresult r = EINVAL_;
    lock();
    int hi = handle_index(h), slot = -1;
    if (hi >= 0 && !g_handles[hi].released && n <= g_handles[hi].size && find_resv(p, n) >= 0) {
        r = OK;
        for (int i = 0; i < SMALL_CAP; i++)
            if (!g_maps[i].size) { if (slot < 0) slot = i; }
            else if (p < g_maps[i].va + g_maps[i].size && g_maps[i].va < p + n) r = EMAPPED;
        if (r == OK && slot < 0) r = EOOM;
        if (r == OK) g_maps[slot].va = p, g_maps[slot].size = n, g_maps[slot].h = hi, g_handles[hi].maps++;
    }
    unlock();
    return r;
}
static CUresult b_cuMemUnmap(CUdeviceptr p, size_t n) {
    HIT(cuMemUnmap); NEED_INIT();
    lock();
    int removed = unmap_range(p, n);
    unlock();
    return removed ? OK : EINVAL_;
}
static CUresult i_cuMemSetAccess(CUdeviceptr p, size_t n, const CUmemAccessDesc *desc, size_t count) {
    HIT(cuMemSetAccess); NEED_INIT();
    lock();
    int ok = desc && count && find_resv(p, n) >= 0;
    unlock();
    return ok ? OK : EINVAL_;
}
static CUresult i_cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int option) {
    HIT(cuMemGetAllocationGranularity); NEED_INIT(); (void)option;
    if (!g || !prop) return EINVAL_;
    *g = GRAN;
    return OK;
}

/* --- hints: legacy (device ordinal) and CUDA 13 (CUmemLocation) forms ----------------------------- */
static CUresult i_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice d, CUstream s) {
    HIT(cuMemPrefetchAsync); NEED_INIT(); (void)s;
    return in_arena(p, n) && (d == 0 || d == -1) ? OK : EINVAL_; /* -1: CU_DEVICE_CPU */
}
static CUresult i_cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s) {
    HIT(cuMemPrefetchAsync_v2); NEED_INIT(); (void)s; (void)loc;
    return in_arena(p, n) && !flags ? OK : EINVAL_;
}
static CUresult i_cuMemAdvise(CUdeviceptr p, size_t n, int advice, CUdevice d) {
    HIT(cuMemAdvise); NEED_INIT(); (void)d;
    return in_arena(p, n) && advice >= 1 && advice <= 6 ? OK : EINVAL_;
}
static CUresult i_cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, CUmemLocation loc) {
    HIT(cuMemAdvise_v2); NEED_INIT(); (void)loc;
    return in_arena(p, n) && advice >= 1 && advice <= 6 ? OK : EINVAL_;
}

/* --- stream clocks: asynchronous copies take virtual GPU time ------------------------------------ */
static u64 g_clock[SMALL_CAP + 1];           /* per stream (slot 0: the default streams), in ns */
static unsigned stream_slot(CUstream s) {
    char *p = s;
    return p >= g_streams && p < g_streams + SMALL_CAP ? (unsigned)(p - g_streams) + 1 : 0;
}
static int kind_at(u64 a) { /* the kind of the CUDA allocation holding a, 0 for none (lock held) */
    if (!in_arena(a, 1)) return 0;
    for (unsigned i = 0; i < REC_CAP; i++)
        if (g_recs[i].addr && a >= g_recs[i].addr && a < g_recs[i].addr + g_recs[i].size) return g_recs[i].kind;
    return 0;
}
static int registered(u64 a) { /* lock held */
    for (int i = 0; i < SMALL_CAP; i++)
        if (g_reg[i].size && a >= g_reg[i].start && a < g_reg[i].start + g_reg[i].size) return 1;
    return 0;
}
/* 64 bytes/ns device to device, 16 with pinned or registered host memory, 4 with pageable. */
static void advance(CUstream st, u64 dst, u64 src, size_t n) {
    lock();
    int dk = kind_at(dst), sk = kind_at(src);
    u64 rate = (dk & (K_DEVICE | K_MANAGED)) && (sk & (K_DEVICE | K_MANAGED)) ? 64
             : dk == K_PINNED || sk == K_PINNED || registered(dst) || registered(src) ? 16 : 4;
    g_clock[stream_slot(st)] += n / rate;
    unlock();
}

/* --- copies (synchronous and "async" alike: a memmove) ------------------------------------------- */
static CUresult copy(u64 dst, u64 src, size_t n);
static CUresult copy_async(u64 dst, u64 src, size_t n, CUstream st) {
    CUresult r = copy(dst, src, n);
    if (r == OK) advance(st, dst, src, n);
    return r;
}
#define COPY(name, dst_t, src_t)                                                                     \
    static CUresult b_##name(dst_t d, src_t s, size_t n) { HIT(name); return copy((u64)d, (u64)s, n); }
#define COPY_ASYNC(name, dst_t, src_t)                                                               \
    static CUresult b_##name(dst_t d, src_t s, size_t n, CUstream st) { HIT(name); return copy_async((u64)d, (u64)s, n, st); }
COPY(cuMemcpy, CUdeviceptr, CUdeviceptr) COPY(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr)
COPY_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr) COPY_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr)
COPY(cuMemcpyHtoD_v2, CUdeviceptr, const void *) COPY(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *)
COPY(cuMemcpyDtoH_v2, void *, CUdeviceptr) COPY(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr)
COPY(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr) COPY(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr)
COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *) COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr) COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr)
COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr) COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr)


/* --- peer copies, memsets, 2D and 3D copies ------------------------------------------------------ */
#define PEER(name)                                                                                   \
    static CUresult b_##name(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {   \
        HIT(name); (void)dc; (void)sc; return copy(d, s, n); }
#define PEER_ASYNC(name)                                                                             \
    static CUresult b_##name(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,     \
                             CUstream st) { HIT(name); (void)dc; (void)sc; (void)st; return copy(d, s, n); }
PEER(cuMemcpyPeer) PEER(cuMemcpyPeer_ptds) PEER_ASYNC(cuMemcpyPeerAsync) PEER_ASYNC(cuMemcpyPeerAsync_ptsz)

static CUresult set(u64 d, u64 v, size_t n, size_t elem) {
    NEED_INIT();
    if (!d) return EINVAL_;
    for (size_t i = 0; i < n; i++) memcpy((char *)d + i * elem, &v, elem);
    return OK;
}
#define SET(name, t, elem)                                                                           \
    static CUresult i_##name(CUdeviceptr d, t v, size_t n) { HIT(name); return set(d, v, n, elem); }
#define SET_ASYNC(name, t, elem)                                                                     \
    static CUresult i_##name(CUdeviceptr d, t v, size_t n, CUstream st) { HIT(name); (void)st; return set(d, v, n, elem); }
SET(cuMemsetD8_v2, unsigned char, 1) SET(cuMemsetD8_v2_ptds, unsigned char, 1)
SET(cuMemsetD16_v2, unsigned short, 2) SET(cuMemsetD16_v2_ptds, unsigned short, 2)
SET(cuMemsetD32_v2, unsigned int, 4) SET(cuMemsetD32_v2_ptds, unsigned int, 4)
SET_ASYNC(cuMemsetD8Async, unsigned char, 1) SET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1)
SET_ASYNC(cuMemsetD16Async, unsigned short, 2) SET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2)
SET_ASYNC(cuMemsetD32Async, unsigned int, 4) SET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4)

/* 2D memsets: `h` rows of `w` elements, `pitch` bytes apart. */
static CUresult set2d(u64 d, size_t pitch, u64 v, size_t w, size_t h, size_t elem) {
    NEED_INIT();
    if (!d || pitch < w * elem) return EINVAL_;
    for (size_t y = 0; y < h; y++) {
        CUresult r = set(d + y * pitch, v, w, elem);
        if (r) return r;
    }
    return OK;
}
static CUresult i_cuMemsetD2D8_v2(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) { HIT(cuMemsetD2D8_v2); return set2d(d, p, v, w, h, 1); }
static CUresult i_cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) { HIT(cuMemsetD2D8_v2_ptds); return set2d(d, p, v, w, h, 1); }
static CUresult i_cuMemsetD2D32Async(CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h, CUstream st) { HIT(cuMemsetD2D32Async); (void)st; return set2d(d, p, v, w, h, 4); }
static CUresult i_cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h, CUstream st) { HIT(cuMemsetD2D32Async_ptsz); (void)st; return set2d(d, p, v, w, h, 4); }

/* CUDA_MEMCPY3D; a CUDA_MEMCPY2D is read into one (its fields are a prefix of the 3D ones, in order). */
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD; int srcMemoryType; const void *srcHost; CUdeviceptr srcDevice;
    void *srcArray, *reserved0; size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD; int dstMemoryType; void *dstHost; CUdeviceptr dstDevice;
    void *dstArray, *reserved1; size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} memcpy3d_t;
typedef struct {
    size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost; CUdeviceptr srcDevice; void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost; CUdeviceptr dstDevice; void *dstArray;
    size_t dstPitch, WidthInBytes, Height;
} memcpy2d_t;
static CUresult copy3d(const memcpy3d_t *c) {
    NEED_INIT();
    if (!c || c->srcMemoryType == 3 || c->dstMemoryType == 3) return EINVAL_; /* no CUDA arrays here */
    u64 src = c->srcMemoryType == 1 ? (u64)c->srcHost : c->srcDevice;
    u64 dst = c->dstMemoryType == 1 ? (u64)c->dstHost : c->dstDevice;
    size_t depth = c->Depth ? c->Depth : 1, rows = c->Height ? c->Height : 1;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < rows; y++) {
            u64 s = src + c->srcXInBytes + (c->srcY + y) * c->srcPitch + (c->srcZ + z) * c->srcPitch * c->srcHeight;
            u64 d = dst + c->dstXInBytes + (c->dstY + y) * c->dstPitch + (c->dstZ + z) * c->dstPitch * c->dstHeight;
            CUresult r = copy(d, s, c->WidthInBytes);
            if (r) return r;
        }
    return OK;
}
static CUresult copy2d(const memcpy2d_t *c) {
    if (!c) return EINVAL_;
    memcpy3d_t t = {0};
    t.srcXInBytes = c->srcXInBytes, t.srcY = c->srcY, t.srcMemoryType = c->srcMemoryType;
    t.srcHost = c->srcHost, t.srcDevice = c->srcDevice, t.srcArray = c->srcArray, t.srcPitch = c->srcPitch;
    t.dstXInBytes = c->dstXInBytes, t.dstY = c->dstY, t.dstMemoryType = c->dstMemoryType;
    t.dstHost = c->dstHost, t.dstDevice = c->dstDevice, t.dstArray = c->dstArray, t.dstPitch = c->dstPitch;
    t.WidthInBytes = c->WidthInBytes, t.Height = c->Height, t.Depth = 1;
    return copy3d(&t);
}
#define C2D(name) static CUresult b_##name(const memcpy2d_t *c) { HIT(name); return copy2d(c); }
#define C2D_ASYNC(name) static CUresult b_##name(const memcpy2d_t *c, CUstream st) { HIT(name); (void)st; return copy2d(c); }
#define C3D(name) static CUresult b_##name(const memcpy3d_t *c) { HIT(name); return copy3d(c); }
#define C3D_ASYNC(name) static CUresult b_##name(const memcpy3d_t *c, CUstream st) { HIT(name); (void)st; return copy3d(c); }
C2D(cuMemcpy2D_v2) C2D(cuMemcpy2D_v2_ptds) C2D(cuMemcpy2DUnaligned_v2) C2D(cuMemcpy2DUnaligned_v2_ptds)
C2D_ASYNC(cuMemcpy2DAsync_v2) C2D_ASYNC(cuMemcpy2DAsync_v2_ptsz)
C3D(cuMemcpy3D_v2) C3D(cuMemcpy3D_v2_ptds) C3D_ASYNC(cuMemcpy3DAsync_v2) C3D_ASYNC(cuMemcpy3DAsync_v2_ptsz)

/* --- events and stream capture ----------------------------------------------------------------------
 * An event recorded on a stream takes the stream's clock; a query reports not-ready (600) once after
 * each record, then success; cuEventElapsedTime gives the difference of two clocks. While a capture in
 * global mode (0) is underway every event call is a violation, as a query is on a real driver: it
 * fails with 900 and invalidates the capture (cuStreamEndCapture then returns 901).
 * standin_capture_violations() counts them. */
static struct { int live, recorded, queried; u64 t; } g_events[SMALL_CAP];
static int g_capturing[SMALL_CAP + 1], g_global_captures, g_invalidated;
static unsigned long long g_violations;
static char g_event_handles[SMALL_CAP], g_graph;

static int event_index(void *e) {
    char *p = e;
    return p >= g_event_handles && p < g_event_handles + SMALL_CAP && g_events[p - g_event_handles].live
               ? (int)(p - g_event_handles) : -1;
}
static int capture_violation(void) { /* lock held */
    if (!g_global_captures) return 0;
    g_violations++, g_invalidated = 1;
    return 1;
}
static CUresult i_cuEventCreate(void **e, unsigned flags) {
    HIT(cuEventCreate); NEED_INIT();
    if (!e || flags > 15) return EINVAL_;
    lock();
    if (capture_violation()) { unlock(); return 900; }
    for (int i = 0; i < SMALL_CAP; i++)
        if (!g_events[i].live) {
            g_events[i].live = 1, g_events[i].recorded = 0, g_events[i].queried = 0;
            *e = &g_event_handles[i];
            unlock();
            return OK;
        }
    unlock();
    return EOOM;
}
static CUresult i_cuEventDestroy_v2(void *e) {
    HIT(cuEventDestroy_v2); NEED_INIT();
    lock();
    int i = event_index(e);
    if (i >= 0) g_events[i].live = 0;
    unlock();
    return i >= 0 ? OK : EHANDLE;
}
static CUresult record(void *e, CUstream s) {
    NEED_INIT();
    lock();
    int i = event_index(e);
    if (i < 0) { unlock(); return EHANDLE; }
    if (capture_violation()) { unlock(); return 900; }
    g_events[i].recorded = 1, g_events[i].queried = 0, g_events[i].t = g_clock[stream_slot(s)];
    unlock();
    return OK;
}
static CUresult i_cuEventRecord(void *e, CUstream s) { HIT(cuEventRecord); return record(e, s); }
static CUresult i_cuEventRecord_ptsz(void *e, CUstream s) { HIT(cuEventRecord_ptsz); return record(e, s); }
static CUresult i_cuEventQuery(void *e) {
    HIT(cuEventQuery); NEED_INIT();
    lock();
    int i = event_index(e);
    CUresult r = i < 0 ? EHANDLE : capture_violation() ? 900 : OK;
    if (r == OK && g_events[i].recorded && !g_events[i].queried) g_events[i].queried = 1, r = 600;
    unlock();
    return r;
}
static CUresult i_cuEventElapsedTime(float *ms, void *a, void *b) {
    HIT(cuEventElapsedTime); NEED_INIT();
    if (!ms) return EINVAL_;
    lock();
    int i = event_index(a), j = event_index(b);
    CUresult r = i < 0 || j < 0 ? EHANDLE : capture_violation() ? 900
               : !g_events[i].recorded || !g_events[j].recorded ? 400 : OK;
    if (r == OK) *ms = (float)((double)(g_events[j].t - g_events[i].t) / 1e6);
    unlock();
    return r;
}
static CUresult i_cuStreamBeginCapture_v2(CUstream s, int mode) {
    HIT(cuStreamBeginCapture_v2); NEED_INIT();
    unsigned k = stream_slot(s);
    if (!k || mode < 0 || mode > 2) return EINVAL_; /* the default streams cannot be captured */
    lock();
    if (g_capturing[k]) { unlock(); return 401; }
    g_capturing[k] = 1 + mode;
    if (mode == 0) g_global_captures++;
    unlock();
    return OK;
}
static CUresult i_cuStreamEndCapture(CUstream s, void **graph) {
    HIT(cuStreamEndCapture); NEED_INIT();
    unsigned k = stream_slot(s);
    if (!graph) return EINVAL_;
    lock();
    if (!k || !g_capturing[k]) { unlock(); return 401; }
    if (g_capturing[k] == 1) g_global_captures--;
    g_capturing[k] = 0;
    CUresult r = g_invalidated ? 901 : OK;
    if (!g_global_captures) g_invalidated = 0;
    unlock();
    *graph = r == OK ? &g_graph : 0;
    return r;
}
static CUresult i_cuStreamIsCapturing(CUstream s, int *status) {
    HIT(cuStreamIsCapturing); NEED_INIT();
    if (!status) return EINVAL_;
    lock();
    *status = g_capturing[stream_slot(s)] ? 1 : 0;
    unlock();
    return OK;
}
