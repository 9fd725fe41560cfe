// managed_migrations.cu - managed memory that migrates on demand next to managed memory that is
// prefetched, for CUPTI's unified-memory counters (memshim run with MEMSHIM_CUPTI=1).
// Build: nvcc -O2 -o managed_migrations managed_migrations.cu
// Run:   MEMSHIM_CUPTI=1 memshim run -o out -- ./managed_migrations ; memshim report out
//
//   on_demand   256 MiB cudaMallocManaged, filled on the host, summed by a kernel (the GPU faults the
//               pages over: about 256 MiB host to device), then read back on the host (CPU faults,
//               about 256 MiB device to host);
//   prefetched  256 MiB the same way, but cudaMemPrefetchAsync'd to the GPU before the kernel and back
//               to the host before the read: migrations without page faults.
// Expected: unified_memory.cupti "on"; the on_demand site first with most of the GPU page faults;
// finding managed_migrations. Prints both sums and "done"; exit 0.
#include "ck.cuh"

static const size_t kBytes = 256ull << 20, kN = kBytes / sizeof(float);

__global__ void add_one(float *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] += 1.0f;
}

static double host_sum(const float *p) {
    double s = 0;
    for (size_t i = 0; i < kN; i += 1024) s += p[i];
    return s;
}

__attribute__((noinline)) float *on_demand() {
    float *p;
    CK(cudaMallocManaged(&p, kBytes));
    for (size_t i = 0; i < kN; i++) p[i] = 1.0f;
    add_one<<<1024, 256>>>(p, kN);
    CK(cudaDeviceSynchronize());
    printf("on demand: %.0f\n", host_sum(p));
    return p;
}

__attribute__((noinline)) float *prefetched() {
    float *p;
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaMallocManaged(&p, kBytes));
    for (size_t i = 0; i < kN; i++) p[i] = 1.0f;
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, dev}, host = {cudaMemLocationTypeHost, 0};
    CK(cudaMemPrefetchAsync(p, kBytes, gpu, 0, 0));
    add_one<<<1024, 256>>>(p, kN);
    CK(cudaMemPrefetchAsync(p, kBytes, host, 0, 0));
    CK(cudaDeviceSynchronize());
    printf("prefetched: %.0f\n", host_sum(p));
    return p;
}

int main() {
    float *a = on_demand(), *b = prefetched();
    CK(cudaFree(a));
    CK(cudaFree(b));
    printf("done\n");
    return 0;
}
