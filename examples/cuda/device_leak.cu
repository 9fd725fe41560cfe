// device_leak.cu - device allocations through the CUDA runtime, some leaked, on a real GPU.
// Build: nvcc -g -o device_leak device_leak.cu            (static runtime: cudart reaches the
//        nvcc -g -cudart shared -o device_leak_shared device_leak.cu    driver via cuGetProcAddress)
// Run:   memshim run -o out -- ./device_leak ; memshim report out
//
// Expected memshim report, device memory, sites from this file's functions:
//   leak_device     3145728 B in 3 blocks  (one site: 3 x cudaMalloc(1 MiB) in a loop -> cuMemAlloc_v2)
//   leak_pitch      pitch x 100 B, 1 block (cudaMallocPitch width 1000 B, height 100 -> cuMemAllocPitch_v2;
//                                           the program prints the pitch and the bytes: 1024 and
//                                           102400 on current GPUs, whose pitch alignment is 512)
//   leak_async        65536 B in 1 block   (cudaMallocAsync on a created stream -> cuMemAllocAsync)
//   alloc_and_free   no leak               (2 x cudaMalloc(4096), pageable cudaMemcpy HtoD, DtoD, DtoH,
//                                           both cudaFree'd)
// Total device leak: 3145728 + pitch*100 + 65536 B (3313664 with pitch 1024) in 5 blocks; 7 device
// allocations from this file, 2 frees, 0 failed. Peak live device memory from this file: the leak
// total + 8192 (inside alloc_and_free, which runs last). No host-heap leak from this file's functions.
// Prints "leak_pitch: pitch P bytes B" and "done"; exit 0.
#include "ck.cuh"
#include <cstring>

static const size_t MiB = 1024 * 1024;

__attribute__((noinline)) void leak_device() {
    for (int i = 0; i < 3; i++) {
        void *p = nullptr;
        CK(cudaMalloc(&p, MiB));
    }
    KEEP_FRAME();
}

__attribute__((noinline)) void leak_pitch() {
    void *p = nullptr;
    size_t pitch = 0;
    CK(cudaMallocPitch(&p, &pitch, 1000, 100));
    std::printf("leak_pitch: pitch %zu bytes %zu\n", pitch, pitch * 100);
}

__attribute__((noinline)) void leak_async() {
    cudaStream_t stream;
    void *p = nullptr;
    CK(cudaStreamCreate(&stream));
    CK(cudaMallocAsync(&p, 64 * 1024, stream));
    CK(cudaStreamSynchronize(stream));
}

__attribute__((noinline)) void alloc_and_free() {
    static unsigned char in[4096], out[4096];
    void *a = nullptr, *b = nullptr;
    CK(cudaMalloc(&a, sizeof in));
    CK(cudaMalloc(&b, sizeof in));
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 7);
    CK(cudaMemcpy(a, in, sizeof in, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, a, sizeof in, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(out, b, sizeof out, cudaMemcpyDeviceToHost));
    EXPECT(std::memcmp(in, out, sizeof in) == 0);
    CK(cudaFree(a));
    CK(cudaFree(b));
}

int main() {
    CK(cudaSetDevice(0));
    leak_device();
    leak_pitch();
    leak_async();
    alloc_and_free();
    CK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
