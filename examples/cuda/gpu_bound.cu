// gpu_bound.cu - three ways a GPU can be held back, for the NVML findings of memshim's device section.
// Build: nvcc -O2 -o gpu_bound gpu_bound.cu.  Run: memshim run -o out -- ./gpu_bound MODE ; memshim report out
//
//   bandwidth  a grid-stride copy kernel between two 2 GiB buffers, back to back for 8 s: kernels run
//              nearly all the time and the memory is busy most of it -> finding `bandwidth_bound`;
//   idle       a tiny kernel every 50 ms for 8 s, the host sleeping in between (a job waiting on its
//              data) -> finding `gpu_idle`;
//   capacity   cudaMalloc's until less than 2% of the GPU's memory is free, then the copy kernel on the
//              first 1 GiB for 8 s -> finding `capacity_bound` (NVML: used >= 95% of total).
// Eight seconds each because the findings need 10 NVML readings, and on the H200 the sampler reads
// less often than every 200 ms when a reading is slow (3-second runs gave none of the three).
// Everything is freed before exit; prints "MODE done"; exit 0 (1 on a bad MODE or a CUDA error).
#include "ck.cuh"
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

__global__ void stream_copy(const float4 *in, float4 *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
}

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static void copy_for(const float4 *in, float4 *out, size_t bytes, double secs) {
    auto t0 = std::chrono::steady_clock::now();
    while (seconds_since(t0) < secs) {
        for (int i = 0; i < 20; i++) stream_copy<<<2048, 256>>>(in, out, bytes / sizeof(float4));
        CK(cudaDeviceSynchronize());
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "bandwidth")) {
        const size_t n = 2ull << 30;
        float4 *a, *b;
        CK(cudaMalloc(&a, n));
        CK(cudaMalloc(&b, n));
        CK(cudaMemset(a, 1, n));
        copy_for(a, b, n, 8.0);
        CK(cudaFree(a));
        CK(cudaFree(b));
    } else if (!strcmp(mode, "idle")) {
        float4 *a;
        CK(cudaMalloc(&a, 1 << 20));
        auto t0 = std::chrono::steady_clock::now();
        while (seconds_since(t0) < 8.0) {
            stream_copy<<<1, 32>>>(a, a, 32);
            CK(cudaDeviceSynchronize());
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        CK(cudaFree(a));
    } else if (!strcmp(mode, "capacity")) {
        std::vector<void *> blocks;
        size_t free_b = 0, total = 0;
        CK(cudaMemGetInfo(&free_b, &total));
        while (free_b > total / 50 + (1ull << 30)) {
            void *p;
            CK(cudaMalloc(&p, 1ull << 30));
            blocks.push_back(p);
            CK(cudaMemGetInfo(&free_b, &total));
        }
        copy_for((const float4 *)blocks[0], (float4 *)blocks[1], 1ull << 30, 8.0);
        for (void *p : blocks) CK(cudaFree(p));
    } else {
        fprintf(stderr, "usage: gpu_bound bandwidth|idle|capacity\n");
        return 1;
    }
    printf("%s done\n", mode);
    return 0;
}
