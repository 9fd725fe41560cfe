// oom_retry.cu - a device allocation that fails for lack of memory, a cache flush, and a retry that works.
// Build: nvcc -g -o oom_retry oom_retry.cu ; nvcc -g -cudart shared -o oom_retry_shared oom_retry.cu
// Run:   memshim run -o out -- ./oom_retry ; memshim report out
//
// The sizes follow the GPU: S = 60% of the free memory cudaMemGetInfo reports at start, rounded down to
// 2 MiB (about 84 GB on an idle 141 GB H200). The program prints S as "size S".
// Expected memshim report, device memory, sites from this file's functions:
//   failed allocations: 1 at try_big, S bytes, result 2 (CUDA_ERROR_OUT_OF_MEMORY from cuMemAlloc_v2;
//                       the runtime's cudaErrorMemoryAllocation, also 2)
//   leak:  try_big      S B in 1 block (the retry after the flush succeeds and is kept)
//   hold_cache          no leak        (S B, cudaFree'd by flush_cache before the retry)
// Device allocations from this file: 3 (hold ok, big failed, big ok), frees: 1.
// Peak live device memory from this file: S (never 2 S); at exit S.
// Prints "size S", "try_big: 2 (cudaErrorMemoryAllocation)", "try_big: 0 (cudaSuccess)", "done"; exit 0.
#include "ck.cuh"

static void *cache = nullptr; // what hold_cache keeps
static void *big = nullptr;   // what try_big got (leaked)

__attribute__((noinline)) void hold_cache(size_t bytes) {
    CK(cudaMalloc(&cache, bytes));
    KEEP_FRAME();
}

__attribute__((noinline)) cudaError_t try_big(size_t bytes) {
    cudaError_t e = cudaMalloc(&big, bytes);
    std::printf("try_big: %d (%s)\n", (int)e, cudaGetErrorName(e));
    return e;
}

__attribute__((noinline)) void flush_cache() {
    CK(cudaFree(cache));
    cache = nullptr;
}

int main() {
    size_t free_b = 0, total = 0;
    CK(cudaSetDevice(0));
    CK(cudaMemGetInfo(&free_b, &total));
    const size_t two_mib = 2u << 20;
    size_t size = (size_t)(free_b * 0.6) / two_mib * two_mib;
    std::printf("free %zu of %zu\nsize %zu\n", free_b, total, size);

    hold_cache(size);
    cudaError_t e = try_big(size);
    EXPECT(e == cudaErrorMemoryAllocation);
    (void)cudaGetLastError(); // clear the runtime's last error: the failure was expected
    flush_cache();
    e = try_big(size);
    EXPECT(e == cudaSuccess && big != nullptr);
    CK(cudaMemset(big, 0, 4096));
    CK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
