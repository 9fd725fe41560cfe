/* standin_procs.h - cuGetProcAddress, the table it reads, the exported names (aliases of the i_NAME
 * implementations in standin_functions.h) and two test helpers. Included once, at the end of
 * libcuda_standin.c.
 */
/* --- cuGetProcAddress ------------------------------------------------------------------------------- */
static CUresult i_cuGetProcAddress_v2(const char *, void **, int, unsigned long long, int *);
static CUresult i_cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags) {
    HIT(cuGetProcAddress);
    return i_cuGetProcAddress_v2(sym, pfn, version, flags, 0);
}
/* base name; default export; per-thread-stream export (flags & 2); export for cudaVersion >= from. */
#define F(f) (void *)i_##f
static const struct { const char *name; void *fn, *pt, *newer; int from; } PROCS[] = {
    {"cuInit", F(cuInit), 0, 0, 0}, {"cuDriverGetVersion", F(cuDriverGetVersion), 0, 0, 0},
    {"cuDeviceGet", F(cuDeviceGet), 0, 0, 0}, {"cuDeviceGetCount", F(cuDeviceGetCount), 0, 0, 0},
    {"cuDeviceGetName", F(cuDeviceGetName), 0, 0, 0},
    {"cuDeviceTotalMem", F(cuDeviceTotalMem_v2), 0, 0, 0},
    {"cuDeviceGetDefaultMemPool", F(cuDeviceGetDefaultMemPool), 0, 0, 0},
    {"cuCtxGetDevice", F(cuCtxGetDevice), 0, 0, 0}, {"cuCtxGetCurrent", F(cuCtxGetCurrent), 0, 0, 0},
    {"cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain), 0, 0, 0},
    {"cuDevicePrimaryCtxRelease", F(cuDevicePrimaryCtxRelease_v2), 0, 0, 0},
    {"cuDevicePrimaryCtxGetState", F(cuDevicePrimaryCtxGetState), 0, 0, 0},
    {"cuCtxPushCurrent", F(cuCtxPushCurrent_v2), 0, 0, 0}, {"cuCtxPopCurrent", F(cuCtxPopCurrent_v2), 0, 0, 0},
    {"cuCtxSetCurrent", F(cuCtxSetCurrent), 0, 0, 0}, {"cuCtxSynchronize", F(cuCtxSynchronize), 0, 0, 0},
    {"cuStreamCreate", F(cuStreamCreate), 0, 0, 0}, {"cuStreamDestroy", F(cuStreamDestroy_v2), 0, 0, 0},
    {"cuStreamSynchronize", F(cuStreamSynchronize), F(cuStreamSynchronize_ptsz), 0, 0},
    {"cuMemAlloc", F(cuMemAlloc_v2), 0, 0, 0}, {"cuMemAllocPitch", F(cuMemAllocPitch_v2), 0, 0, 0},
    {"cuMemAllocManaged", F(cuMemAllocManaged), 0, 0, 0},
    {"cuMemAllocAsync", F(cuMemAllocAsync), F(cuMemAllocAsync_ptsz), 0, 0},
    {"cuMemAllocFromPoolAsync", F(cuMemAllocFromPoolAsync), F(cuMemAllocFromPoolAsync_ptsz), 0, 0},
    {"cuMemFree", F(cuMemFree_v2), 0, 0, 0}, {"cuMemFreeAsync", F(cuMemFreeAsync), F(cuMemFreeAsync_ptsz), 0, 0},
    {"cuMemHostAlloc", F(cuMemHostAlloc), 0, 0, 0}, {"cuMemAllocHost", F(cuMemAllocHost_v2), 0, 0, 0},
    {"cuMemFreeHost", F(cuMemFreeHost), 0, 0, 0}, {"cuMemHostRegister", F(cuMemHostRegister_v2), 0, 0, 0},
    {"cuMemHostUnregister", F(cuMemHostUnregister), 0, 0, 0}, {"cuMemGetInfo", F(cuMemGetInfo_v2), 0, 0, 0},
    {"cuMemAddressReserve", F(cuMemAddressReserve), 0, 0, 0}, {"cuMemAddressFree", F(cuMemAddressFree), 0, 0, 0},
    {"cuMemCreate", F(cuMemCreate), 0, 0, 0}, {"cuMemRelease", F(cuMemRelease), 0, 0, 0},
    {"cuMemMap", F(cuMemMap), 0, 0, 0}, {"cuMemUnmap", F(cuMemUnmap), 0, 0, 0},
    {"cuMemSetAccess", F(cuMemSetAccess), 0, 0, 0},
    {"cuMemGetAllocationGranularity", F(cuMemGetAllocationGranularity), 0, 0, 0},
    {"cuMemPrefetchAsync", F(cuMemPrefetchAsync), 0, F(cuMemPrefetchAsync_v2), 13000},
    {"cuMemAdvise", F(cuMemAdvise), 0, F(cuMemAdvise_v2), 13000},
    {"cuMemcpy", F(cuMemcpy), F(cuMemcpy_ptds), 0, 0}, {"cuMemcpyAsync", F(cuMemcpyAsync), F(cuMemcpyAsync_ptsz), 0, 0},
    {"cuMemcpyHtoD", F(cuMemcpyHtoD_v2), F(cuMemcpyHtoD_v2_ptds), 0, 0},
    {"cuMemcpyDtoH", F(cuMemcpyDtoH_v2), F(cuMemcpyDtoH_v2_ptds), 0, 0},
    {"cuMemcpyDtoD", F(cuMemcpyDtoD_v2), F(cuMemcpyDtoD_v2_ptds), 0, 0},
    {"cuMemcpyHtoDAsync", F(cuMemcpyHtoDAsync_v2), F(cuMemcpyHtoDAsync_v2_ptsz), 0, 0},
    {"cuMemcpyDtoHAsync", F(cuMemcpyDtoHAsync_v2), F(cuMemcpyDtoHAsync_v2_ptsz), 0, 0},
    {"cuMemcpyDtoDAsync", F(cuMemcpyDtoDAsync_v2), F(cuMemcpyDtoDAsync_v2_ptsz), 0, 0},
    {"cuGetProcAddress", F(cuGetProcAddress), 0, F(cuGetProcAddress_v2), 12000},
    {"cuMemcpyPeer", F(cuMemcpyPeer), F(cuMemcpyPeer_ptds), 0, 0},
    {"cuMemcpyPeerAsync", F(cuMemcpyPeerAsync), F(cuMemcpyPeerAsync_ptsz), 0, 0},
    {"cuMemsetD8", F(cuMemsetD8_v2), F(cuMemsetD8_v2_ptds), 0, 0},
    {"cuMemsetD16", F(cuMemsetD16_v2), F(cuMemsetD16_v2_ptds), 0, 0},
    {"cuMemsetD32", F(cuMemsetD32_v2), F(cuMemsetD32_v2_ptds), 0, 0},
    {"cuMemsetD8Async", F(cuMemsetD8Async), F(cuMemsetD8Async_ptsz), 0, 0},
    {"cuMemsetD16Async", F(cuMemsetD16Async), F(cuMemsetD16Async_ptsz), 0, 0},
    {"cuMemsetD32Async", F(cuMemsetD32Async), F(cuMemsetD32Async_ptsz), 0, 0},
    {"cuMemcpy2D", F(cuMemcpy2D_v2), F(cuMemcpy2D_v2_ptds), 0, 0},
    {"cuMemcpy2DUnaligned", F(cuMemcpy2DUnaligned_v2), F(cuMemcpy2DUnaligned_v2_ptds), 0, 0},
    {"cuMemcpy2DAsync", F(cuMemcpy2DAsync_v2), F(cuMemcpy2DAsync_v2_ptsz), 0, 0},
    {"cuMemcpy3D", F(cuMemcpy3D_v2), F(cuMemcpy3D_v2_ptds), 0, 0},
    {"cuMemcpy3DAsync", F(cuMemcpy3DAsync_v2), F(cuMemcpy3DAsync_v2_ptsz), 0, 0},
    {"cuEventCreate", F(cuEventCreate), 0, 0, 0}, {"cuEventDestroy", F(cuEventDestroy_v2), 0, 0, 0},
    {"cuEventRecord", F(cuEventRecord), F(cuEventRecord_ptsz), 0, 0}, {"cuEventQuery", F(cuEventQuery), 0, 0, 0},
    {"cuEventElapsedTime", F(cuEventElapsedTime), 0, 0, 0},
    {"cuStreamBeginCapture", F(cuStreamBeginCapture_v2), 0, 0, 0},
    {"cuStreamEndCapture", F(cuStreamEndCapture), 0, 0, 0},
    {"cuStreamIsCapturing", F(cuStreamIsCapturing), 0, 0, 0},
    {"cuMemsetD2D8", F(cuMemsetD2D8_v2), F(cuMemsetD2D8_v2_ptds), 0, 0},
    {"cuMemsetD2D32Async", F(cuMemsetD2D32Async), F(cuMemsetD2D32Async_ptsz), 0, 0},
};
static CUresult i_cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, int *status) {
    HIT(cuGetProcAddress_v2);
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    if (!sym || !pfn || flags > 2) return EINVAL_;
    *pfn = 0;
    for (size_t i = 0; i < sizeof PROCS / sizeof PROCS[0]; i++) {
        if (strcmp(PROCS[i].name, sym)) continue;
        void *f = PROCS[i].fn;
        if (PROCS[i].newer && version >= PROCS[i].from) f = PROCS[i].newer;
        else if ((flags & 2) && PROCS[i].pt) f = PROCS[i].pt;
        *pfn = f;
        if (status) *status = 0;
        return OK;
    }
    return ENOTFOUND;
}

/* --- the exports: each name is an alias of its implementation (same address, not interposable) ---- */
#define EXPORT(n) extern __typeof__(i_##n) n __attribute__((alias("i_" #n), visibility("default")));
NAMES(EXPORT)

unsigned long long standin_call_count(const char *name) {
    for (int i = 0; i < ID_COUNT; i++)
        if (name && !strcmp(g_names[i], name)) return __atomic_load_n(&g_calls[i], __ATOMIC_RELAXED);
    return 0;
}
unsigned long long standin_capture_violations(void) { return __atomic_load_n(&g_violations, __ATOMIC_RELAXED); }
unsigned long long standin_live_bytes(void) {
    lock();
    unsigned long long v = g_live;
    unlock();
    return v;
}
