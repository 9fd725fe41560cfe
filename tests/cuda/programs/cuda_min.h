/* cuda_min.h - the little of the CUDA driver API that the test programs use, declared by hand (no CUDA
 * headers needed), with the real driver's ABI.
 *
 * By default it also gives a loader that reaches the driver the way nvcc's static runtime does:
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), ask that for "cuGetProcAddress" (version
 * 12000), then fetch every other entry point through it by base name (cu.cuMemAlloc is whatever the
 * driver hands back for "cuMemAlloc", i.e. cuMemAlloc_v2). Define CUDA_MIN_DIRECT before including it
 * to get plain prototypes of the exported symbols instead (for programs linked with -lcuda).
 */
#ifndef CUDA_MIN_H
#define CUDA_MIN_H
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { int type, id; } CUmemLocation;
typedef struct {
    int type;                 /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
    int requestedHandleTypes; /* 0: none */
    CUmemLocation location;   /* { CU_MEM_LOCATION_TYPE_DEVICE = 1, ordinal } */
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 */ } CUmemAccessDesc;

enum {
    CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NOT_FOUND = 500,
    CU_GET_PROC_ADDRESS_DEFAULT = 0, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2,
    CU_MEM_ATTACH_GLOBAL = 1, CU_MEM_ADVISE_SET_READ_MOSTLY = 1, CU_MEMHOSTALLOC_PORTABLE = 1,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1, CU_MEM_LOCATION_TYPE_DEVICE = 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
};
#define CUDA_MIN_VERSION 12000 /* cudaVersion passed to cuGetProcAddress: legacy prefetch/advise forms */

typedef CUresult (*PFN_cuGetProcAddress_v2)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*PFN_cuInit)(unsigned);
typedef CUresult (*PFN_cuDriverGetVersion)(int *);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext);
typedef CUresult (*PFN_cuCtxSynchronize)(void);
typedef CUresult (*PFN_cuStreamCreate)(CUstream *, unsigned);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream);
typedef CUresult (*PFN_cuMemAlloc)(CUdeviceptr *, size_t);
typedef CUresult (*PFN_cuMemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*PFN_cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*PFN_cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*PFN_cuMemFree)(CUdeviceptr);
typedef CUresult (*PFN_cuMemFreeAsync)(CUdeviceptr, CUstream);
typedef CUresult (*PFN_cuMemHostAlloc)(void **, size_t, unsigned);
typedef CUresult (*PFN_cuMemAllocHost)(void **, size_t);
typedef CUresult (*PFN_cuMemFreeHost)(void *);
typedef CUresult (*PFN_cuMemHostRegister)(void *, size_t, unsigned);
typedef CUresult (*PFN_cuMemHostUnregister)(void *);
typedef CUresult (*PFN_cuMemGetInfo)(size_t *, size_t *);
typedef CUresult (*PFN_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*PFN_cuMemAddressFree)(CUdeviceptr, size_t);
typedef CUresult (*PFN_cuMemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*PFN_cuMemRelease)(CUmemGenericAllocationHandle);
typedef CUresult (*PFN_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*PFN_cuMemUnmap)(CUdeviceptr, size_t);
typedef CUresult (*PFN_cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*PFN_cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
typedef CUresult (*PFN_cuMemPrefetchAsync)(CUdeviceptr, size_t, CUdevice, CUstream);
typedef CUresult (*PFN_cuMemAdvise)(CUdeviceptr, size_t, int, CUdevice);
typedef CUresult (*PFN_cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*PFN_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
typedef CUresult (*PFN_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
typedef CUresult (*PFN_cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*PFN_cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);

/* Fail loudly: print the call and its CUresult, exit 1. */
#define CK(call)                                                                                     \
    do {                                                                                             \
        CUresult ck_r_ = (call);                                                                     \
        if (ck_r_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "%s:%d: %s failed: CUresult %d\n", __FILE__, __LINE__, #call, ck_r_);    \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)
#define EXPECT(cond)                                                                                 \
    do {                                                                                             \
        if (!(cond)) { fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); exit(1); } \
    } while (0)

#ifdef CUDA_MIN_DIRECT
CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
#else
#include <dlfcn.h>

/* Every entry point the loader fetches with flags 0; cu.NAME has type PFN_NAME. */
#define CUDA_MIN_FNS(X)                                                                              \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)     \
    X(cuCtxSynchronize) X(cuStreamCreate) X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemAllocPitch)    \
    X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemFree) X(cuMemFreeAsync) X(cuMemHostAlloc)          \
    X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemGetInfo)   \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate) X(cuMemRelease) X(cuMemMap)             \
    X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAllocationGranularity) X(cuMemPrefetchAsync)           \
    X(cuMemAdvise) X(cuMemcpy) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync)

static struct {
#define CUDA_MIN_FIELD(n) PFN_##n n;
    CUDA_MIN_FNS(CUDA_MIN_FIELD)
#undef CUDA_MIN_FIELD
} cu;
static void *cuda_min_lib;                       /* the dlopen handle of libcuda.so.1 */
static PFN_cuGetProcAddress_v2 cuda_min_getproc; /* what the driver gave for "cuGetProcAddress" */

/* One entry point by base name; flags as cuGetProcAddress's. Exits when it is missing. */
static inline void *cuda_min_proc(const char *name, unsigned long long flags) {
    void *fn = NULL;
    int status = -1;
    CUresult r = cuda_min_getproc(name, &fn, CUDA_MIN_VERSION, flags, &status);
    if (r != CUDA_SUCCESS || status != 0 || !fn) {
        fprintf(stderr, "cuGetProcAddress(%s, flags %llu): CUresult %d, status %d\n", name, flags, r, status);
        exit(1);
    }
    return fn;
}

/* dlopen the driver, bootstrap cuGetProcAddress as cudart does, fill `cu`. */
static inline void cuda_min_load(void) {
    cuda_min_lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda_min_lib) { fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror()); exit(1); }
    PFN_cuGetProcAddress_v2 boot = (PFN_cuGetProcAddress_v2)dlsym(cuda_min_lib, "cuGetProcAddress_v2");
    if (!boot) { fprintf(stderr, "dlsym(cuGetProcAddress_v2): %s\n", dlerror()); exit(1); }
    cuda_min_getproc = boot;
    cuda_min_getproc = (PFN_cuGetProcAddress_v2)cuda_min_proc("cuGetProcAddress", 0);
#define CUDA_MIN_LOAD(n) cu.n = (PFN_##n)cuda_min_proc(#n, 0);
    CUDA_MIN_FNS(CUDA_MIN_LOAD)
#undef CUDA_MIN_LOAD
}

/* cuInit, device 0, its primary context made current. */
static inline void cuda_min_init(void) {
    CUdevice dev;
    CUcontext ctx;
    cuda_min_load();
    CK(cu.cuInit(0));
    CK(cu.cuDeviceGet(&dev, 0));
    CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cu.cuCtxSetCurrent(ctx));
}
#endif /* CUDA_MIN_DIRECT */
#endif /* CUDA_MIN_H */
