/* copies_shaped.c - the copies that are not plain 1D ones: 2D and 3D copies, peer copies and memsets,
 * each fetched through cuGetProcAddress (some in their per-thread-stream forms, flags = 2).
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/copies_shaped
 *
 * Expected memshim transfers summary, exactly (direction, host memory: copies, bytes):
 *   HtoD pageable: 1 copy, 6400 B      (2D: 64 rows of 100 bytes from a malloc'd buffer, pitch 128)
 *   DtoH pinned:   1 copy, 6400 B      (2D async, the same rows back into cuMemAllocHost memory)
 *   DtoD device:   1 copy, 256 B       (3D: 32 bytes x 4 rows x 2 slices, device to device)
 *   peer device:   2 copies, 5120 B    (cuMemcpyPeer 4096, cuMemcpyPeerAsync_ptsz 1024)
 *   memset device: 5 calls, 6776 B     (D8 1000 bytes, D32 250 words, D16Async_ptsz 500 halves,
 *                                       2D8 24 rows of 100 bytes at pitch 128 = 2400,
 *                                       2D32Async_ptsz 8 rows of 43 words at pitch 256 = 1376)
 * Prints "done"; exit 0.
 */
#include "cuda_min.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost; CUdeviceptr srcDevice; void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost; CUdeviceptr dstDevice; void *dstArray;
    size_t dstPitch, WidthInBytes, Height;
} CUDA_MEMCPY2D;
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD; int srcMemoryType; const void *srcHost; CUdeviceptr srcDevice;
    void *srcArray, *reserved0; size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD; int dstMemoryType; void *dstHost; CUdeviceptr dstDevice;
    void *dstArray, *reserved1; size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
enum { HOST = 1, DEVICE = 2 };

typedef CUresult (*PFN_2D)(const CUDA_MEMCPY2D *);
typedef CUresult (*PFN_2DAsync)(const CUDA_MEMCPY2D *, CUstream);
typedef CUresult (*PFN_3D)(const CUDA_MEMCPY3D *);
typedef CUresult (*PFN_Peer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
typedef CUresult (*PFN_PeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
typedef CUresult (*PFN_D8)(CUdeviceptr, unsigned char, size_t);
typedef CUresult (*PFN_D32)(CUdeviceptr, unsigned int, size_t);
typedef CUresult (*PFN_D16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
typedef CUresult (*PFN_D2D8)(CUdeviceptr, size_t, unsigned char, size_t, size_t);
typedef CUresult (*PFN_D2D32Async)(CUdeviceptr, size_t, unsigned, size_t, size_t, CUstream);

int main(void) {
    cuda_min_init();
    PFN_2D copy2d = (PFN_2D)cuda_min_proc("cuMemcpy2D", 0);
    PFN_2DAsync copy2d_async = (PFN_2DAsync)cuda_min_proc("cuMemcpy2DAsync", 0);
    PFN_3D copy3d = (PFN_3D)cuda_min_proc("cuMemcpy3D", 0);
    PFN_Peer peer = (PFN_Peer)cuda_min_proc("cuMemcpyPeer", 0);
    PFN_PeerAsync peer_async = (PFN_PeerAsync)cuda_min_proc("cuMemcpyPeerAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    PFN_D8 set8 = (PFN_D8)cuda_min_proc("cuMemsetD8", 0);
    PFN_D32 set32 = (PFN_D32)cuda_min_proc("cuMemsetD32", 0);
    PFN_D16Async set16 = (PFN_D16Async)cuda_min_proc("cuMemsetD16Async", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    PFN_D2D8 set2d8 = (PFN_D2D8)cuda_min_proc("cuMemsetD2D8", 0);
    PFN_D2D32Async set2d32 = (PFN_D2D32Async)cuda_min_proc("cuMemsetD2D32Async", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);

    unsigned char *host = malloc(64 * 128);
    void *pinned;
    CUdeviceptr dev, dev2;
    CUstream stream;
    EXPECT(host != NULL);
    memset(host, 7, 64 * 128);
    CK(cu.cuMemAllocHost(&pinned, 64 * 128));
    CK(cu.cuMemAlloc(&dev, 64 * 128));
    CK(cu.cuMemAlloc(&dev2, 64 * 128));
    CK(cu.cuStreamCreate(&stream, 0));

    CUDA_MEMCPY2D up = {0};
    up.srcMemoryType = HOST, up.srcHost = host, up.srcPitch = 128;
    up.dstMemoryType = DEVICE, up.dstDevice = dev, up.dstPitch = 128;
    up.WidthInBytes = 100, up.Height = 64;
    CK(copy2d(&up));
    CUDA_MEMCPY2D down = {0};
    down.srcMemoryType = DEVICE, down.srcDevice = dev, down.srcPitch = 128;
    down.dstMemoryType = HOST, down.dstHost = pinned, down.dstPitch = 128;
    down.WidthInBytes = 100, down.Height = 64;
    CK(copy2d_async(&down, stream));
    CK(cu.cuStreamSynchronize(stream));
    EXPECT(((unsigned char *)pinned)[128 * 63 + 99] == 7);

    CUDA_MEMCPY3D cube = {0};
    cube.srcMemoryType = DEVICE, cube.srcDevice = dev, cube.srcPitch = 64, cube.srcHeight = 4;
    cube.dstMemoryType = DEVICE, cube.dstDevice = dev2, cube.dstPitch = 64, cube.dstHeight = 4;
    cube.WidthInBytes = 32, cube.Height = 4, cube.Depth = 2;
    CK(copy3d(&cube));

    CUcontext ctx = NULL;
    CK(peer(dev2, ctx, dev, ctx, 4096));
    CK(peer_async(dev2, ctx, dev, ctx, 1024, stream));
    CK(set8(dev, 1, 1000));
    CK(set32(dev, 2, 250));
    CK(set16(dev2, 3, 500, stream));
    CK(set2d8(dev, 128, 4, 100, 24));
    CK(set2d32(dev2, 256, 5, 43, 8, stream));
    CK(cu.cuStreamSynchronize(stream));
    free(host);
    printf("done\n");
    return 0;
}
