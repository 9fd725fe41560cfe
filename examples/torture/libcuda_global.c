/* libcuda_global.c - a tiny stand-in CUDA driver (libcuda.so.1) whose cuGetProcAddress binds through the
 * global scope: it answers with dlsym(RTLD_DEFAULT, "<name>_v2"), as a driver that resolves its own
 * table by symbol would. A preloaded library exporting the same names is what such a lookup finds.
 * Build: cc -shared -fPIC -g -O0 -o DIR/libcuda.so.1 libcuda_global.c -ldl
 * Functions: cuInit, cuDriverGetVersion, cuGetProcAddress_v2, cuMemAlloc_v2, cuMemFree_v2. Device
 * memory comes from a static 16 MiB arena (bump allocator, frees only counted); cuMemAlloc before
 * cuInit returns 3 (CUDA_ERROR_NOT_INITIALIZED), an unknown name 500 (CUDA_ERROR_NOT_FOUND).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;

static int initialised;
static unsigned char arena[16u << 20] __attribute__((aligned(4096)));
static size_t used;

int cuInit(unsigned flags) {
    (void)flags;
    initialised = 1;
    return 0;
}

int cuDriverGetVersion(int *v) {
    *v = 12000;
    return 0;
}

int cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
    if (!initialised)
        return 3;
    size = (size + 511) & ~(size_t)511;
    if (used + size > sizeof arena)
        return 2;
    *p = (CUdeviceptr)(arena + used);
    used += size;
    return 0;
}

int cuMemFree_v2(CUdeviceptr p) {
    if (!initialised)
        return 3;
    return p >= (CUdeviceptr)arena && p < (CUdeviceptr)(arena + used) ? 0 : 1;
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *status) {
    (void)version;
    (void)flags;
    char name[128];
    if (strcmp(symbol, "cuInit") == 0 || strcmp(symbol, "cuDriverGetVersion") == 0 ||
        strcmp(symbol, "cuGetProcAddress") == 0)
        snprintf(name, sizeof name, "%s%s", symbol,
                 strcmp(symbol, "cuGetProcAddress") == 0 ? "_v2" : "");
    else
        snprintf(name, sizeof name, "%s_v2", symbol);
    *pfn = dlsym(RTLD_DEFAULT, name);
    if (status)
        *status = *pfn ? 1 : 0;
    return *pfn ? 0 : 500;
}
