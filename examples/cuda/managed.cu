// managed.cu - managed memory, pinned host memory and host registration through the CUDA runtime.
// Build: nvcc -g -o managed managed.cu ; nvcc -g -cudart shared -o managed_shared managed.cu
// Run:   memshim run -o out -- ./managed ; memshim report out
// Builds against CUDA 12 (cudaMemPrefetchAsync/cudaMemAdvise take a device ordinal) and CUDA 13 (they
// take a cudaMemLocation).
//
// Expected memshim report, sites from this file's functions:
//   leak_managed   2097152 B in 1 block  managed (cudaMallocManaged -> cuMemAllocManaged; written from
//                                        the host, advised read-mostly, prefetched to device 0, memset
//                                        on the device)
//   leak_pinned     262144 B in 1 block  pinned host (cudaHostAlloc(cudaHostAllocPortable) -> cuMemHostAlloc)
//   pinned_roundtrip no leak             (cudaMallocHost 131072 B -> cuMemAllocHost_v2, used for a pinned
//                                        cudaMemcpyAsync HtoD and a cudaMemcpy DtoH, cudaFreeHost;
//                                        plus a 4096 B cudaMalloc, cudaFree'd)
//   register_roundtrip no leak           (malloc 65536 B, cudaHostRegister -> cuMemHostRegister_v2,
//                                        cudaHostUnregister, free: no host-heap leak either)
// Device + managed leak from this file: 2097152 B in 1 block; pinned host leak: 262144 B in 1 block;
// no host memory left registered. Prints "done"; exit 0.
#include "ck.cuh"
#include <cstring>

static const size_t KiB = 1024;

__attribute__((noinline)) void leak_managed(int dev, cudaStream_t stream) {
    unsigned char *p = nullptr;
    const size_t n = 2048 * KiB;
    CK(cudaMallocManaged(&p, n, cudaMemAttachGlobal));
    std::memset(p, 0x5a, n); // managed memory is host-accessible
#if CUDART_VERSION >= 13000
    cudaMemLocation loc;
    std::memset(&loc, 0, sizeof loc);
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    CK(cudaMemAdvise(p, n, cudaMemAdviseSetReadMostly, loc));
    CK(cudaMemPrefetchAsync(p, n, loc, 0, stream));
#else
    CK(cudaMemAdvise(p, n, cudaMemAdviseSetReadMostly, dev));
    CK(cudaMemPrefetchAsync(p, n, dev, stream));
#endif
    CK(cudaMemsetAsync(p, 0x11, n, stream));
    CK(cudaStreamSynchronize(stream));
    EXPECT(p[n - 1] == 0x11);
}

__attribute__((noinline)) void leak_pinned() {
    void *p = nullptr;
    CK(cudaHostAlloc(&p, 256 * KiB, cudaHostAllocPortable));
    std::memset(p, 1, 256 * KiB);
}

__attribute__((noinline)) void pinned_roundtrip(cudaStream_t stream) {
    unsigned char *stage = nullptr;
    void *d = nullptr;
    CK(cudaMallocHost(&stage, 128 * KiB));
    CK(cudaMalloc(&d, 4 * KiB));
    for (size_t i = 0; i < 4 * KiB; i++) stage[i] = (unsigned char)i;
    CK(cudaMemcpyAsync(d, stage, 4 * KiB, cudaMemcpyHostToDevice, stream));
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(stage + 64 * KiB, d, 4 * KiB, cudaMemcpyDeviceToHost));
    EXPECT(std::memcmp(stage, stage + 64 * KiB, 4 * KiB) == 0);
    CK(cudaFree(d));
    CK(cudaFreeHost(stage));
}

__attribute__((noinline)) void register_roundtrip() {
    void *buf = std::malloc(64 * KiB);
    EXPECT(buf != nullptr);
    std::memset(buf, 2, 64 * KiB);
    CK(cudaHostRegister(buf, 64 * KiB, cudaHostRegisterDefault));
    CK(cudaHostUnregister(buf));
    std::free(buf);
}

int main() {
    const int dev = 0;
    cudaStream_t stream;
    CK(cudaSetDevice(dev));
    CK(cudaStreamCreate(&stream));
    leak_managed(dev, stream);
    leak_pinned();
    pinned_roundtrip(stream);
    register_roundtrip();
    CK(cudaStreamDestroy(stream));
    std::printf("done\n");
    return 0;
}
