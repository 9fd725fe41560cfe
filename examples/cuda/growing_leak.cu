// growing_leak.cu - live device memory that climbs linearly: 20 steps, each leaking 8 MiB.
// Build: nvcc -g -o growing_leak growing_leak.cu ; nvcc -g -cudart shared -o growing_leak_shared growing_leak.cu
// Run:   memshim run -o out -- ./growing_leak ; memshim report out
//
// Expected memshim report, device memory, sites from this file's functions:
//   step_leak   167772160 B in 20 blocks  (one site: cudaMalloc(8 MiB) -> cuMemAlloc_v2, once per step;
//                                          each buffer is filled by a kernel, so it is really used)
//   no other device allocation from this file; 20 allocations, 0 frees, 0 failed.
// Live device memory from this file climbs by 8388608 B per step, one step every ~20 ms (a 20 ms
// sleep after each), from 8 MiB after step 1 to 160 MiB after step 20: a straight line over
// >= 0.4 s; the peak (167772160 B) is at the end. Prints "step N: M MiB live" per step and "done"; exit 0.
#include "ck.cuh"
#include <unistd.h>

static const size_t STEP_BYTES = 8u * 1024 * 1024;
static const int STEPS = 20;

__global__ void fill(unsigned *p, size_t n, unsigned value) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = value;
}

__attribute__((noinline)) void *step_leak(int step) {
    void *p = nullptr;
    CK(cudaMalloc(&p, STEP_BYTES));
    fill<<<256, 256>>>(static_cast<unsigned *>(p), STEP_BYTES / sizeof(unsigned), (unsigned)step);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    return p;
}

int main() {
    CK(cudaSetDevice(0));
    void *last = nullptr;
    for (int step = 1; step <= STEPS; step++) {
        last = step_leak(step);
        std::printf("step %d: %zu MiB live\n", step, step * STEP_BYTES / (1024 * 1024));
        std::fflush(stdout);
        usleep(20 * 1000);
    }
    unsigned first_word = 0;
    CK(cudaMemcpy(&first_word, last, sizeof first_word, cudaMemcpyDeviceToHost));
    EXPECT(first_word == (unsigned)STEPS);
    std::printf("done\n");
    return 0;
}
