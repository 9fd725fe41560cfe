/* copies.c - 1D host/device copies of every kind memshim records, through cuGetProcAddress.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/copies
 *
 * Device buffers d[0..4] are 1 MiB each from cuMemAlloc (made and freed in main); every function
 * below issues each kind of copy from ONE call site (a loop), so each (function, direction,
 * host_memory) is exactly one transfers.sites[] row. Every copy counted here is issued exactly once
 * (no hidden verification copies): the data is checked by the DtoH copies that are themselves counted.
 *
 * Expected memshim transfers.sites[], exactly (MiB = 1048576, KiB = 1024):
 *   pageable_h2d        HtoD pageable    10 x 1 MiB    = 10485760 B  cuMemcpyHtoD_v2, same malloc'd buffer
 *   pinned_h2d_async    HtoD pinned      10 x 1 MiB    = 10485760 B  cuMemcpyHtoDAsync_v2 from cuMemHostAlloc
 *                                                                    memory on a created stream
 *   pageable_h2d_async  HtoD pageable     4 x 1 MiB    =  4194304 B  cuMemcpyHtoDAsync_v2 from malloc
 *   registered_h2d      HtoD registered   3 x 1 MiB    =  3145728 B  cuMemcpyHtoD_v2 from a malloc'd buffer
 *                                                                    cuMemHostRegister_v2'd (then unregistered)
 *   device_d2d          DtoD device       2 x 1 MiB    =  2097152 B  cuMemcpyDtoD_v2
 *   managed_h2d         HtoD managed      1 x 1 MiB    =  1048576 B  cuMemcpyHtoD_v2, source cuMemAllocManaged
 *   small_storm         HtoD pageable  2000 x 64 B     =   128000 B  cuMemcpyHtoD_v2 from malloc
 *   pageable_d2h        DtoH pageable     5 x 1 MiB    =  5242880 B  cuMemcpyDtoH_v2 into malloc
 *   unified_copies      HtoD pageable     4 x 256 KiB  =  1048576 B  cuMemcpy (dst device, src malloc)
 *   unified_copies      DtoH pageable     2 x 256 KiB  =   524288 B  cuMemcpyAsync (dst malloc, src device)
 *
 * Expected transfers.summary[] rows, exactly (5 rows, no others from this program):
 *   HtoD pageable   count 2018  bytes 15856640  = pageable_h2d 10 x 1 MiB (10485760)
 *                                               + pageable_h2d_async 4 x 1 MiB (4194304)
 *                                               + small_storm 2000 x 64 B (128000)
 *                                               + unified_copies cuMemcpy 4 x 256 KiB (1048576)
 *   HtoD pinned     count   10  bytes 10485760
 *   HtoD registered count    3  bytes  3145728
 *   HtoD managed    count    1  bytes  1048576
 *   DtoH pageable   count    7  bytes  5767168  = pageable_d2h 5 x 1 MiB (5242880)
 *                                               + unified_copies cuMemcpyAsync 2 x 256 KiB (524288)
 *   DtoD device     count    2  bytes  2097152
 * Totals: 2041 copies, 38401024 B. No DtoH/pinned, DtoH/registered or DtoD rows other than the above.
 *
 * Data flow (so every counted copy's data is checked): d[0] <- P1 (pageable_h2d), d[1] <- P2 (pinned),
 * d[2] <- P3 (pageable async), d[3] <- P4 (registered); device_d2d: d[4] <- d[2], then d[2] <- d[3];
 * managed_h2d: d[3] <- P5; small_storm overwrites d[0]'s first 128000 B with 2000 distinct 64 B
 * chunks of P6. pageable_d2h reads back all five and memcmps: d[0] = P6[0..128000) + P1[128000..),
 * d[1] = P2, d[2] = P4, d[3] = P5, d[4] = P3. unified_copies is its own round trip (own device buffer).
 * Memory: 6 cuMemAlloc'd device buffers (5 + unified_copies' 1), 1 managed, 1 pinned, 1 registered
 * range, 2 streams: all freed / unregistered / destroyed; every malloc is freed: no leaks of any kind
 * from this file's functions. Prints "done"; exit 0.
 */
#include "cuda_min.h"
#include <string.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define NBUF 5
#define STORM_N 2000
#define STORM_B 64

typedef CUresult (*PFN_cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*PFN_cuStreamDestroy)(CUstream);
static PFN_cuMemcpyAsync memcpy_async;
static PFN_cuStreamDestroy stream_destroy;

/* Pattern `seed` at byte offset i: different for every seed and not periodic at 256. */
static unsigned char pat(unsigned seed, size_t i) { return (unsigned char)(i * (2 * seed + 1) + (i >> 8) * 3 + seed * 41); }
static void fill(unsigned char *p, size_t n, unsigned seed) { for (size_t i = 0; i < n; i++) p[i] = pat(seed, i); }
static int matches(const unsigned char *p, size_t from, size_t to, unsigned seed) {
    for (size_t i = from; i < to; i++) if (p[i] != pat(seed, i)) return 0;
    return 1;
}
static unsigned char *xmalloc(size_t n) { unsigned char *p = malloc(n); EXPECT(p != NULL); return p; }

__attribute__((noinline)) void pageable_h2d(CUdeviceptr dst) {
    unsigned char *h = xmalloc(MiB);
    fill(h, MiB, 1);
    for (int i = 0; i < 10; i++) CK(cu.cuMemcpyHtoD(dst, h, MiB));
    free(h);
}

__attribute__((noinline)) void pinned_h2d_async(CUdeviceptr dst) {
    unsigned char *h = NULL;
    CUstream s;
    CK(cu.cuMemHostAlloc((void **)&h, MiB, 0));
    CK(cu.cuStreamCreate(&s, 0));
    fill(h, MiB, 2);
    for (int i = 0; i < 10; i++) CK(cu.cuMemcpyHtoDAsync(dst, h, MiB, s));
    CK(cu.cuStreamSynchronize(s));
    CK(stream_destroy(s));
    CK(cu.cuMemFreeHost(h));
}

/* The "async from pageable" bug: the driver stages through its own pinned buffer, synchronously. */
__attribute__((noinline)) void pageable_h2d_async(CUdeviceptr dst) {
    unsigned char *h = xmalloc(MiB);
    fill(h, MiB, 3);
    for (int i = 0; i < 4; i++) CK(cu.cuMemcpyHtoDAsync(dst, h, MiB, NULL));
    CK(cu.cuCtxSynchronize());
    free(h);
}

__attribute__((noinline)) void registered_h2d(CUdeviceptr dst) {
    unsigned char *h = xmalloc(MiB);
    fill(h, MiB, 4);
    CK(cu.cuMemHostRegister(h, MiB, 0));
    for (int i = 0; i < 3; i++) CK(cu.cuMemcpyHtoD(dst, h, MiB));
    CK(cu.cuMemHostUnregister(h));
    free(h);
}

__attribute__((noinline)) void device_d2d(const CUdeviceptr *d) {
    const CUdeviceptr dst[2] = {d[4], d[2]}, src[2] = {d[2], d[3]}; /* d4 <- d2 (P3), then d2 <- d3 (P4) */
    for (int i = 0; i < 2; i++) CK(cu.cuMemcpyDtoD(dst[i], src[i], MiB));
}

__attribute__((noinline)) void managed_h2d(CUdeviceptr dst) {
    CUdeviceptr m;
    CK(cu.cuMemAllocManaged(&m, MiB, CU_MEM_ATTACH_GLOBAL));
    fill((unsigned char *)(unsigned long)m, MiB, 5); /* managed memory is host-accessible */
    CK(cu.cuMemcpyHtoD(dst, (const void *)(unsigned long)m, MiB));
    CK(cu.cuMemFree(m));
}

/* 2000 tiny copies: chunk i of a malloc'd buffer to offset i * 64 of the device buffer. */
__attribute__((noinline)) void small_storm(CUdeviceptr dst) {
    unsigned char *h = xmalloc(STORM_N * STORM_B);
    fill(h, STORM_N * STORM_B, 6);
    for (int i = 0; i < STORM_N; i++) CK(cu.cuMemcpyHtoD(dst + (CUdeviceptr)i * STORM_B, h + (size_t)i * STORM_B, STORM_B));
    free(h);
}

__attribute__((noinline)) void pageable_d2h(const CUdeviceptr *d) {
    unsigned char *h = xmalloc(MiB);
    static const unsigned want[NBUF] = {1, 2, 4, 5, 3};
    for (int b = 0; b < NBUF; b++) {
        memset(h, 0, MiB);
        CK(cu.cuMemcpyDtoH(h, d[b], MiB));
        size_t from = b == 0 ? STORM_N * STORM_B : 0;
        if (b == 0) EXPECT(matches(h, 0, from, 6));
        if (!matches(h, from, MiB, want[b])) { fprintf(stderr, "buffer %d: wrong data\n", b); exit(1); }
    }
    free(h);
}

/* Unified addressing: cuMemcpy / cuMemcpyAsync infer the direction from the pointers. */
__attribute__((noinline)) void unified_copies(void) {
    const size_t n = 256 * KiB;
    unsigned char *src = xmalloc(4 * n), *back = xmalloc(2 * n);
    CUdeviceptr d;
    CUstream s;
    CK(cu.cuMemAlloc(&d, 4 * n));
    CK(cu.cuStreamCreate(&s, 0));
    fill(src, 4 * n, 7);
    memset(back, 0, 2 * n);
    for (int i = 0; i < 4; i++) CK(cu.cuMemcpy(d + i * n, (CUdeviceptr)(unsigned long)(src + i * n), n));
    for (int i = 0; i < 2; i++) /* chunks 3 and 0 back */
        CK(memcpy_async((CUdeviceptr)(unsigned long)(back + i * n), d + (3 - 3 * i) * n, n, s));
    CK(cu.cuStreamSynchronize(s));
    EXPECT(memcmp(back, src + 3 * n, n) == 0 && memcmp(back + n, src, n) == 0);
    CK(stream_destroy(s));
    CK(cu.cuMemFree(d));
    free(back);
    free(src);
}

int main(void) {
    CUdeviceptr d[NBUF];
    cuda_min_init();
    memcpy_async = (PFN_cuMemcpyAsync)cuda_min_proc("cuMemcpyAsync", 0);
    stream_destroy = (PFN_cuStreamDestroy)cuda_min_proc("cuStreamDestroy", 0);
    for (int b = 0; b < NBUF; b++) CK(cu.cuMemAlloc(&d[b], MiB));

    pageable_h2d(d[0]);
    pinned_h2d_async(d[1]);
    pageable_h2d_async(d[2]);
    registered_h2d(d[3]);
    device_d2d(d);
    managed_h2d(d[3]);
    small_storm(d[0]);
    pageable_d2h(d);
    unified_copies();

    CK(cu.cuCtxSynchronize());
    for (int b = 0; b < NBUF; b++) CK(cu.cuMemFree(d[b]));
    printf("done\n");
    return 0;
}
