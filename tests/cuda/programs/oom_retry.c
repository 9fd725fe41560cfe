/* oom_retry.c - an allocation that fails for lack of device memory, a cache flush, and a retry.
 * Build: tests/cuda/build.sh OUT. Run with a 64 MiB device:
 *   STANDIN_CUDA_MEM_BYTES=67108864 LD_LIBRARY_PATH=OUT OUT/oom_retry
 * (exits 2 with a message when the device's total memory is not 64 MiB).
 *
 * Expected memshim report, device memory, sites from this file's functions, exactly:
 *   failed allocations: 1, at try_big: 33554432 B, result 2 (CUDA_ERROR_OUT_OF_MEMORY), cuMemAlloc_v2
 *   leak:  try_big      33554432 B in 1 block  (the retry, after the flush, succeeds and is kept)
 *   hold_cache          no leak                (41943040 B = 40 MiB, freed by flush_cache)
 * Device allocations: 3 (hold 40 MiB ok, 32 MiB failed, 32 MiB ok), frees: 1.
 * Peak live device memory: 41943040 B; at exit 33554432 B.
 * Prints "hold: free 25165824 of 67108864", "try_big: 2", "flushed: free 67108864",
 * "retry: 0", "end: free 33554432 of 67108864", "done"; exit 0.
 */
#include "cuda_min.h"

#define MiB (1024u * 1024u)

static CUdeviceptr cache;  /* what hold_cache keeps */
static CUdeviceptr big;    /* what try_big got (leaked) */

__attribute__((noinline)) void hold_cache(void) { CK(cu.cuMemAlloc(&cache, 40 * MiB)); }

__attribute__((noinline)) CUresult try_big(void) { return cu.cuMemAlloc(&big, 32 * MiB); }

__attribute__((noinline)) void flush_cache(void) {
    CK(cu.cuMemFree(cache));
    cache = 0;
}

static size_t free_now(size_t *total) {
    size_t free_b;
    CK(cu.cuMemGetInfo(&free_b, total));
    return free_b;
}

int main(void) {
    size_t total, f;
    cuda_min_init();
    f = free_now(&total);
    if (total != 64 * MiB) {
        fprintf(stderr, "oom_retry: needs a 64 MiB device (STANDIN_CUDA_MEM_BYTES=67108864); total is %zu\n", total);
        return 2;
    }
    hold_cache();
    f = free_now(&total);
    printf("hold: free %zu of %zu\n", f, total);
    CUresult r = try_big();
    printf("try_big: %d\n", r);
    EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY);
    flush_cache();
    printf("flushed: free %zu\n", free_now(&total));
    r = try_big();
    printf("retry: %d\n", r);
    EXPECT(r == CUDA_SUCCESS && big != 0);
    f = free_now(&total);
    printf("end: free %zu of %zu\n", f, total);
    printf("done\n");
    return 0;
}
