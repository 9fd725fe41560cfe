// shaped_copies.cu - the CUDA runtime's 2D/3D copies, peer copy and memsets, for checking that memshim
// records them whichever driver entry points the runtime uses.
// Build: nvcc -g -o shaped_copies shaped_copies.cu   (and -cudart shared)
//
// Expected memshim transfers summary (direction, host memory: copies, bytes), exactly:
//   HtoD pageable: 1, 819200   (cudaMemcpy2D: 1024 rows of 800 bytes from malloc'd memory, pitch 1024)
//   DtoH pinned:   1, 819200   (cudaMemcpy2DAsync back into cudaMallocHost memory)
//   DtoD device:   1, 262144   (cudaMemcpy3D: 512 bytes x 128 rows x 4 slices)
//   peer device:   1, 1048576  (cudaMemcpyPeer, device 0 to device 0)
//   memset device: 2, 2097152  (cudaMemset and cudaMemsetAsync of 1 MiB)
// Prints "done".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
    const size_t pitch = 1024, width = 800, rows = 1024;
    unsigned char *host = (unsigned char *)malloc(pitch * rows), *pinned, *dev, *dev2;
    memset(host, 5, pitch * rows);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMallocHost(&pinned, pitch * rows));
    CK(cudaMalloc(&dev, pitch * rows));
    CK(cudaMalloc(&dev2, pitch * rows));
    CK(cudaMemcpy2D(dev, pitch, host, pitch, width, rows, cudaMemcpyHostToDevice));
    CK(cudaMemcpy2DAsync(pinned, pitch, dev, pitch, width, rows, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    if (pinned[pitch * (rows - 1) + width - 1] != 5) { printf("wrong data\n"); return 1; }
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(dev, 512, 512, 128);
    p.dstPtr = make_cudaPitchedPtr(dev2, 512, 512, 128);
    p.extent = make_cudaExtent(512, 128, 4);
    p.kind = cudaMemcpyDeviceToDevice;
    CK(cudaMemcpy3D(&p));
    CK(cudaMemcpyPeer(dev2, 0, dev, 0, 1 << 20));
    CK(cudaMemset(dev, 0, 1 << 20));
    CK(cudaMemsetAsync(dev2, 1, 1 << 20, s));
    CK(cudaStreamSynchronize(s));
    free(host);
    printf("done\n");
    return 0;
}
