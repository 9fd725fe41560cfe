/* device_leak.c - device allocations reached through cuGetProcAddress, as nvcc's static runtime does.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/device_leak
 *
 * Expected memshim report, device memory, sites from this file's functions, exactly:
 *   leak_device     3145728 B in 3 blocks  (one site: 3 x cuMemAlloc(1 MiB) in a loop; cuMemAlloc_v2)
 *   leak_pitch       102400 B in 1 block   (cuMemAllocPitch_v2 width 1000, height 100, elem 4 ->
 *                                           pitch 1024; bytes = pitch * height)
 *   leak_async        65536 B in 1 block   (cuMemAllocAsync on a created stream, through the
 *                                           per-thread-stream variant fetched with flags = 2,
 *                                           i.e. cuMemAllocAsync_ptsz)
 *   alloc_and_free   no leak               (2 x cuMemAlloc(4096), both cuMemFree'd; copies between them)
 * Total device leak: 3313664 B in 5 blocks. Device allocations: 7, frees: 2, failed: 0.
 * Peak live device memory: 3321856 B (inside alloc_and_free, which runs last); at exit 3313664 B.
 * No host-heap leak from this file's functions (it calls no malloc; stdio and dlopen may allocate).
 * Prints "pitch 1024", "live 3313664 of 85899345920" (stand-in default capacity) and "done"; exit 0.
 */
#include "cuda_min.h"
#include <string.h>

#define MiB (1024u * 1024u)

__attribute__((noinline)) void leak_device(void) {
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p;
        CK(cu.cuMemAlloc(&p, MiB));
    }
}

__attribute__((noinline)) void leak_pitch(void) {
    CUdeviceptr p;
    size_t pitch = 0;
    CK(cu.cuMemAllocPitch(&p, &pitch, 1000, 100, 4));
    printf("pitch %zu\n", pitch);
}

__attribute__((noinline)) void leak_async(void) {
    PFN_cuMemAllocAsync alloc_ptsz =
        (PFN_cuMemAllocAsync)cuda_min_proc("cuMemAllocAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUstream stream;
    CUdeviceptr p;
    CK(cu.cuStreamCreate(&stream, 0));
    CK(alloc_ptsz(&p, 64 * 1024, stream));
    CK(cu.cuStreamSynchronize(stream));
}

__attribute__((noinline)) void alloc_and_free(void) {
    CUdeviceptr a, b;
    unsigned char in[4096], out[4096];
    CK(cu.cuMemAlloc(&a, sizeof in));
    CK(cu.cuMemAlloc(&b, sizeof in));
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 7);
    memset(out, 0, sizeof out);
    CK(cu.cuMemcpyHtoD(a, in, sizeof in));
    CK(cu.cuMemcpyDtoD(b, a, sizeof in));
    CK(cu.cuMemcpyDtoH(out, b, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    CK(cu.cuMemFree(a));
    CK(cu.cuMemFree(b));
}

int main(void) {
    size_t free_b, total;
    cuda_min_init();
    leak_device();
    leak_pitch();
    leak_async();
    alloc_and_free();
    CK(cu.cuCtxSynchronize());
    CK(cu.cuMemGetInfo(&free_b, &total));
    printf("live %zu of %zu\n", total - free_b, total);
    printf("done\n");
    return 0;
}
