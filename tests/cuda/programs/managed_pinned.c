/* managed_pinned.c - managed memory, pinned host memory and host registration, through cuGetProcAddress.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/managed_pinned
 *
 * Expected memshim report, sites from this file's functions, exactly:
 *   leak_managed    2097152 B in 1 block  managed (cuMemAllocManaged, CU_MEM_ATTACH_GLOBAL; the
 *                                         program also cuMemPrefetchAsync's it to device 0 and
 *                                         cuMemAdvise's it SET_READ_MOSTLY, and writes it from the host)
 *   leak_pinned      262144 B in 1 block  pinned host (cuMemHostAlloc, CU_MEMHOSTALLOC_PORTABLE)
 *   pinned_roundtrip no leak              (cuMemAllocHost_v2 131072 B, used as a copy staging buffer,
 *                                         then cuMemFreeHost; and a 4096 B device buffer, cuMemFree'd)
 *   register_roundtrip no leak            (malloc 65536 B host buffer, cuMemHostRegister_v2 of all of it,
 *                                         cuMemHostUnregister, free: no host-heap leak either)
 * Device (incl. managed) leak: 2097152 B in 1 block. Pinned host leak: 262144 B in 1 block.
 * Registered host memory at exit: none (65536 B registered once, unregistered).
 * Prints "live 2097152 of 85899345920" (stand-in default capacity) and "done"; exit 0.
 */
#include "cuda_min.h"
#include <string.h>

#define KiB 1024u

__attribute__((noinline)) void leak_managed(void) {
    CUdeviceptr p;
    size_t n = 2048 * KiB;
    CK(cu.cuMemAllocManaged(&p, n, CU_MEM_ATTACH_GLOBAL));
    memset((void *)(unsigned long)p, 0x5a, n); /* managed memory is host-accessible */
    CK(cu.cuMemAdvise(p, n, CU_MEM_ADVISE_SET_READ_MOSTLY, 0));
    CK(cu.cuMemPrefetchAsync(p, n, 0, NULL));
    CK(cu.cuCtxSynchronize());
}

__attribute__((noinline)) void leak_pinned(void) {
    void *p = NULL;
    CK(cu.cuMemHostAlloc(&p, 256 * KiB, CU_MEMHOSTALLOC_PORTABLE));
    memset(p, 1, 256 * KiB);
}

__attribute__((noinline)) void pinned_roundtrip(void) {
    unsigned char *stage = NULL;
    CUdeviceptr d;
    CK(cu.cuMemAllocHost((void **)&stage, 128 * KiB));
    CK(cu.cuMemAlloc(&d, 4 * KiB));
    for (unsigned i = 0; i < 4 * KiB; i++) stage[i] = (unsigned char)i;
    CK(cu.cuMemcpyHtoDAsync(d, stage, 4 * KiB, NULL));
    CK(cu.cuCtxSynchronize());
    CK(cu.cuMemcpyDtoH(stage + 64 * KiB, d, 4 * KiB));
    EXPECT(memcmp(stage, stage + 64 * KiB, 4 * KiB) == 0);
    CK(cu.cuMemFree(d));
    CK(cu.cuMemFreeHost(stage));
}

__attribute__((noinline)) void register_roundtrip(void) {
    void *buf = malloc(64 * KiB);
    EXPECT(buf != NULL);
    memset(buf, 2, 64 * KiB);
    CK(cu.cuMemHostRegister(buf, 64 * KiB, 0));
    CK(cu.cuMemHostUnregister(buf));
    free(buf);
}

int main(void) {
    size_t free_b, total;
    cuda_min_init();
    leak_managed();
    leak_pinned();
    pinned_roundtrip();
    register_roundtrip();
    CK(cu.cuMemGetInfo(&free_b, &total));
    printf("live %zu of %zu\n", total - free_b, total);
    printf("done\n");
    return 0;
}
