/* hints_v2.c - managed memory prefetched and advised through the CUmemLocation forms, as CUDA 13's
 * runtime calls them: "cuMemPrefetchAsync" and "cuMemAdvise" asked of cuGetProcAddress at version
 * 13000 are cuMemPrefetchAsync_v2 and cuMemAdvise_v2.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/hints_v2
 *
 * Expected memshim report: device.managed_hints {prefetch_calls 2, prefetch_bytes 3145728 (2 MiB to
 * device 0, then 1 MiB of it back to the host), advise_calls 1}; managed leak 4194304 B in 1 block
 * at hinted_v2. Prints "done"; exit 0.
 */
#include "cuda_min.h"

typedef CUresult (*PFN_prefetch_v2)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
typedef CUresult (*PFN_advise_v2)(CUdeviceptr, size_t, int, CUmemLocation);

/* An entry point as CUDA 13's runtime asks for it. */
static void *proc13(const char *name) {
    void *fn = NULL;
    int status = -1;
    CUresult r = cuda_min_getproc(name, &fn, 13000, 0, &status);
    if (r != CUDA_SUCCESS || status != 0 || !fn) {
        fprintf(stderr, "cuGetProcAddress(%s, 13000): CUresult %d, status %d\n", name, r, status);
        exit(1);
    }
    return fn;
}

__attribute__((noinline)) void hinted_v2(void) {
    PFN_prefetch_v2 prefetch = (PFN_prefetch_v2)proc13("cuMemPrefetchAsync");
    PFN_advise_v2 advise = (PFN_advise_v2)proc13("cuMemAdvise");
    CUmemLocation gpu = {1, 0}, host = {2, 0}; /* CU_MEM_LOCATION_TYPE_DEVICE, _HOST */
    CUdeviceptr p;
    CK(cu.cuMemAllocManaged(&p, 4u << 20, CU_MEM_ATTACH_GLOBAL));
    CK(advise(p, 4u << 20, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu));
    CK(prefetch(p, 2u << 20, gpu, 0, NULL));
    CK(prefetch(p, 1u << 20, host, 0, NULL));
    CK(cu.cuCtxSynchronize());
}

int main(void) {
    cuda_min_init();
    hinted_v2();
    printf("done\n");
    return 0;
}
