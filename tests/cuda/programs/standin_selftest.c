/* standin_selftest.c - checks the stand-in driver's own contract (run it WITHOUT memshim: under a shim
 * that wraps driver entry points, the address-identity checks may legitimately differ).
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/standin_selftest
 * Prints one "FAIL ..." line per failed check, then "standin selftest ok (N checks)" and exit 0, or
 * "standin selftest: M of N checks failed" and exit 1.
 * Leaves no device memory live: live 0 at exit.
 */
#include "cuda_min.h"
#include <string.h>

static int passed, failed;
#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (cond) passed++;                                                                          \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); }                  \
    } while (0)

/* cuGetProcAddress(base, version, flags) must hand back exactly dlsym(export). */
static void same(const char *base, int version, unsigned long long flags, const char *export) {
    void *fn = NULL, *want = dlsym(cuda_min_lib, export);
    int status = -1;
    CUresult r = cuda_min_getproc(base, &fn, version, flags, &status);
    if (r == CUDA_SUCCESS && status == 0 && fn && fn == want) { passed++; return; }
    failed++;
    printf("FAIL cuGetProcAddress(%s, %d, %llu) = %p (r %d, status %d), dlsym(%s) = %p\n", base, version,
           flags, fn, r, status, export, want);
}

static size_t live(void) {
    size_t f, t;
    CK(cu.cuMemGetInfo(&f, &t));
    return t - f;
}

int main(void) {
    CUdeviceptr a, b;
    void *fn;
    int status, version = 0;
    cuda_min_load();

    /* Before cuInit. */
    CHECK(cu.cuMemAlloc(&a, 16) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cu.cuDriverGetVersion(&version) == CUDA_SUCCESS && version == 13000);

    /* The proc table: base names, versioned exports, per-thread variants, version switches. */
    same("cuMemAlloc", 12000, 0, "cuMemAlloc_v2");
    same("cuMemAlloc", 12000, 2, "cuMemAlloc_v2");
    same("cuMemAllocAsync", 12000, 0, "cuMemAllocAsync");
    same("cuMemAllocAsync", 12000, 2, "cuMemAllocAsync_ptsz");
    same("cuMemAllocFromPoolAsync", 12000, 2, "cuMemAllocFromPoolAsync_ptsz");
    same("cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz");
    same("cuMemcpy", 12000, 2, "cuMemcpy_ptds");
    same("cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2");
    same("cuMemcpyHtoD", 12000, 2, "cuMemcpyHtoD_v2_ptds");
    same("cuMemcpyDtoHAsync", 12000, 2, "cuMemcpyDtoHAsync_v2_ptsz");
    same("cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2");
    same("cuMemHostRegister", 12000, 0, "cuMemHostRegister_v2");
    same("cuMemFree", 12000, 0, "cuMemFree_v2");
    same("cuMemAllocHost", 12000, 0, "cuMemAllocHost_v2");
    same("cuMemAllocPitch", 12000, 0, "cuMemAllocPitch_v2");
    same("cuDeviceTotalMem", 12000, 0, "cuDeviceTotalMem_v2");
    same("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    same("cuGetProcAddress", 11080, 0, "cuGetProcAddress");
    same("cuMemPrefetchAsync", 12000, 0, "cuMemPrefetchAsync");
    same("cuMemPrefetchAsync", 13000, 0, "cuMemPrefetchAsync_v2");
    same("cuMemAdvise", 13000, 0, "cuMemAdvise_v2");
    fn = (void *)1, status = -1;
    CHECK(cuda_min_getproc("cuNoSuchThing", &fn, 12000, 0, &status) == CUDA_ERROR_NOT_FOUND && !fn && status == 1);
    CHECK(cuda_min_getproc("cuMemAlloc_v2", &fn, 12000, 0, &status) == CUDA_ERROR_NOT_FOUND);
    CHECK(cuda_min_getproc("cuMemAlloc", &fn, 12000, 4, &status) == CUDA_ERROR_INVALID_VALUE);
    {
        typedef CUresult (*v1_t)(const char *, void **, int, unsigned long long);
        v1_t v1 = (v1_t)dlsym(cuda_min_lib, "cuGetProcAddress");
        CHECK(v1 && v1("cuMemFree", &fn, 12000, 0) == CUDA_SUCCESS && fn == dlsym(cuda_min_lib, "cuMemFree_v2"));
    }

    /* Allocation errors and address reuse. */
    CK(cu.cuInit(0));
    CHECK(cu.cuMemAlloc(&a, 0) == CUDA_ERROR_INVALID_VALUE);
    CK(cu.cuMemAlloc(&a, 1 << 20));
    CHECK(a % 512 == 0);
    CHECK(cu.cuMemFree(a + 512) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu.cuMemFreeHost((void *)(unsigned long)a) == CUDA_ERROR_INVALID_VALUE);
    CK(cu.cuMemFree(a));
    CHECK(cu.cuMemFree(a) == CUDA_ERROR_INVALID_VALUE);
    CK(cu.cuMemAlloc(&b, 1 << 20));
    CHECK(b == a); /* first fit reuses the freed range */
    CK(cu.cuMemFree(b));
    {
        size_t pitch;
        CHECK(cu.cuMemAllocPitch(&a, &pitch, 100, 2, 3) == CUDA_ERROR_INVALID_VALUE);
        CK(cu.cuMemAllocPitch(&a, &pitch, 513, 3, 8));
        CHECK(pitch == 1024 && live() == 3072);
        CK(cu.cuMemFree(a));
    }

    /* Capacity: one byte more than is free fails with 2 and changes nothing. */
    {
        size_t f, t;
        CK(cu.cuMemGetInfo(&f, &t));
        CHECK(f == t && cu.cuMemAlloc(&a, f + 1) == CUDA_ERROR_OUT_OF_MEMORY && live() == 0);
        CHECK(cu.cuMemAllocManaged(&a, 4096, 1) == CUDA_SUCCESS && live() == 4096);
        CHECK(cu.cuMemFree(a) == CUDA_SUCCESS && live() == 0);
    }

    /* Pinned host memory is not device memory. */
    {
        void *h = NULL;
        CK(cu.cuMemHostAlloc(&h, 4096, 0));
        CHECK(h && live() == 0);
        CHECK(cu.cuMemFree((CUdeviceptr)(unsigned long)h) == CUDA_ERROR_INVALID_VALUE);
        CK(cu.cuMemFreeHost(h));
    }

    /* Host registration. */
    {
        static char buf[8192];
        CK(cu.cuMemHostRegister(buf, sizeof buf, 0));
        CHECK(cu.cuMemHostRegister(buf + 4096, 4096, 0) == 712);
        CK(cu.cuMemHostUnregister(buf));
        CHECK(cu.cuMemHostUnregister(buf) == 713);
    }

    /* VMM: release while mapped keeps the memory until the unmap. */
    {
        CUmemAllocationProp prop;
        CUmemGenericAllocationHandle h;
        CUdeviceptr va;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED, prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        CK(cu.cuMemAddressReserve(&va, 8 << 20, 0, 0, 0));
        CHECK(cu.cuMemCreate(&h, 4096, &prop, 0) == CUDA_ERROR_INVALID_VALUE);
        CK(cu.cuMemCreate(&h, 2 << 20, &prop, 0));
        CK(cu.cuMemMap(va, 2 << 20, 0, h, 0));
        CHECK(cu.cuMemMap(va, 2 << 20, 0, h, 0) == 208);
        CK(cu.cuMemRelease(h));
        CHECK(live() == (2 << 20));
        CHECK(cu.cuMemMap(va + (2 << 20), 2 << 20, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);
        CK(cu.cuMemUnmap(va, 2 << 20));
        CHECK(live() == 0);
        CHECK(cu.cuMemRelease(h) == CUDA_ERROR_INVALID_VALUE);
        CK(cu.cuMemAddressFree(va, 8 << 20));
    }

    /* Churn: blocks never overlap (each keeps its fill), and once all are freed the free list has
     * coalesced back into one range, so nearly the whole 4 GiB arena fits in one allocation. */
    {
        enum { SLOTS = 64 };
        CUdeviceptr blk[SLOTS] = {0};
        size_t len[SLOTS];
        unsigned seed = 12345;
        int intact = 1;
        for (int op = 0; op < 4000; op++) {
            seed = seed * 1103515245u + 12345u;
            int i = (int)((seed >> 8) % SLOTS);
            if (blk[i]) {
                const unsigned char *p = (const unsigned char *)(unsigned long)blk[i];
                for (size_t k = 0; k < len[i]; k += 97) intact &= p[k] == (unsigned char)i;
                CK(cu.cuMemFree(blk[i]));
                blk[i] = 0;
            } else {
                len[i] = 1 + (seed >> 4) % 20000;
                CK(cu.cuMemAlloc(&blk[i], len[i]));
                memset((void *)(unsigned long)blk[i], i, len[i]);
            }
        }
        for (int i = 0; i < SLOTS; i++)
            if (blk[i]) CK(cu.cuMemFree(blk[i]));
        CHECK(intact && live() == 0);
        CHECK(cu.cuMemAlloc(&a, (4ull << 30) - (1 << 20)) == CUDA_SUCCESS);
        CHECK(cu.cuMemFree(a) == CUDA_SUCCESS && live() == 0);
    }

    /* Call counters. */
    {
        typedef unsigned long long (*count_t)(const char *);
        count_t count = (count_t)dlsym(cuda_min_lib, "standin_call_count");
        CHECK(count && count("cuMemFreeHost") == 2 && count("cuInit") == 1 && count("nope") == 0);
    }

    CHECK(live() == 0);
    if (failed) printf("standin selftest: %d of %d checks failed\n", failed, passed + failed);
    else printf("standin selftest ok (%d checks)\n", passed);
    return failed != 0;
}
