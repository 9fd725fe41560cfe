/* direct_link.c - a program linked against the driver (-lcuda) that calls its exported symbols directly,
 * with no dlopen and no cuGetProcAddress (as code built against the driver API does).
 * Build: tests/cuda/build.sh OUT (links with -L OUT -lcuda -Wl,-rpath,OUT). Run: OUT/direct_link
 *
 * Expected memshim report, device memory, sites from this file's functions, exactly:
 *   leak_direct   8192 B in 1 block  (cuMemAlloc_v2 called by symbol)
 *   copy_scratch  no leak            (cuMemAlloc_v2 256 B, HtoD + DtoH round trip, cuMemFree_v2)
 * Device allocations: 2, frees: 1. Peak live device memory: 8448 B; at exit 8192 B.
 * Prints "live 8192 of 85899345920" (stand-in default capacity) and "done"; exit 0.
 */
#define CUDA_MIN_DIRECT
#include "cuda_min.h"
#include <string.h>

__attribute__((noinline)) void leak_direct(void) {
    CUdeviceptr p;
    CK(cuMemAlloc_v2(&p, 8 * 1024));
}

__attribute__((noinline)) void copy_scratch(void) {
    CUdeviceptr p;
    char in[256], out[256];
    memset(in, 'd', sizeof in);
    CK(cuMemAlloc_v2(&p, sizeof in));
    CK(cuMemcpyHtoD_v2(p, in, sizeof in));
    CK(cuMemcpyDtoH_v2(out, p, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    CK(cuMemFree_v2(p));
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    size_t free_b, total;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    leak_direct();
    copy_scratch();
    CK(cuMemGetInfo_v2(&free_b, &total));
    printf("live %zu of %zu\n", total - free_b, total);
    printf("done\n");
    return 0;
}
