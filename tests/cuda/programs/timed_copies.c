/* timed_copies.c - asynchronous copies memshim times on the GPU with events, and a stream capture
 * during which it must not touch an event.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/timed_copies
 *
 * The stand-in driver gives async copies virtual GPU time: 16 bytes/ns with pinned host memory,
 * 4 bytes/ns with pageable (libcuda_standin.c). With memshim's default threshold (64 KiB):
 *   pinned_uploads         HtoD pinned    5 x 1 MiB async   timed: 5 x 65536 ns
 *   pageable_uploads       HtoD pageable  3 x 1 MiB async   timed: 3 x 262144 ns
 *   small_downloads        DtoH pinned    8 x 4 KiB async   not timed (under 64 KiB)
 *   burst_then_capture     HtoD pinned    4 x 1 MiB async   timed: 4 x 65536 ns, still in flight when
 *                                                           the capture begins
 *                          HtoD pinned    2 x 1 MiB async   inside a global-mode capture: not timed
 * So: HtoD pinned 11 copies, 9 timed, 9 MiB in 589824 ns = 16.0 GB/s; HtoD pageable 3 copies, 3 timed,
 * 3 MiB in 786432 ns = 4.0 GB/s; DtoH pinned 8 copies, none timed. cuEventRecord is called twice per
 * timed copy (24), and never during the capture: any event call then would invalidate it, and
 * cuStreamEndCapture would fail. Prints "violations 0"; exit 0.
 */
#include "cuda_min.h"
#include <string.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

typedef CUresult (*PFN_cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*PFN_cuStreamBeginCapture)(CUstream, int);
typedef CUresult (*PFN_cuStreamEndCapture)(CUstream, void **);
static PFN_cuMemcpyDtoHAsync dtoh_async;
static PFN_cuStreamBeginCapture begin_capture;
static PFN_cuStreamEndCapture end_capture;

__attribute__((noinline)) void pinned_uploads(CUdeviceptr d, const void *pinned, CUstream s) {
    for (int i = 0; i < 5; i++) CK(cu.cuMemcpyHtoDAsync(d, pinned, MiB, s));
}

__attribute__((noinline)) void pageable_uploads(CUdeviceptr d, const void *pageable, CUstream s) {
    for (int i = 0; i < 3; i++) CK(cu.cuMemcpyHtoDAsync(d, pageable, MiB, s));
}

__attribute__((noinline)) void small_downloads(void *pinned, CUdeviceptr d, CUstream s) {
    for (int i = 0; i < 8; i++) CK(dtoh_async((char *)pinned + i * 4 * KiB, d, 4 * KiB, s));
}

__attribute__((noinline)) void burst_then_capture(CUdeviceptr d, const void *pinned, CUstream s) {
    void *graph = NULL;
    for (int i = 0; i < 4; i++) CK(cu.cuMemcpyHtoDAsync(d, pinned, MiB, s));
    CK(begin_capture(s, 0)); /* CU_STREAM_CAPTURE_MODE_GLOBAL */
    for (int i = 0; i < 2; i++) CK(cu.cuMemcpyHtoDAsync(d + MiB, pinned, MiB, s));
    usleep(50 * 1000); /* the poller's rounds come and go during the capture */
    CK(end_capture(s, &graph));
    EXPECT(graph != NULL);
}

int main(void) {
    CUdeviceptr d;
    CUstream s;
    void *pinned = NULL;
    cuda_min_init();
    dtoh_async = (PFN_cuMemcpyDtoHAsync)cuda_min_proc("cuMemcpyDtoHAsync", 0);
    begin_capture = (PFN_cuStreamBeginCapture)cuda_min_proc("cuStreamBeginCapture", 0);
    end_capture = (PFN_cuStreamEndCapture)cuda_min_proc("cuStreamEndCapture", 0);
    unsigned long long (*violations)(void) =
        (unsigned long long (*)(void))dlsym(cuda_min_lib, "standin_capture_violations");
    EXPECT(violations != NULL);

    CK(cu.cuMemAlloc(&d, 2 * MiB));
    CK(cu.cuMemHostAlloc(&pinned, MiB, 0));
    char *pageable = malloc(MiB);
    EXPECT(pageable != NULL);
    memset(pageable, 7, MiB);
    memset(pinned, 9, MiB);
    CK(cu.cuStreamCreate(&s, 0));

    pinned_uploads(d, pinned, s);
    pageable_uploads(d, pageable, s);
    small_downloads(pinned, d, s);
    usleep(300 * 1000); /* memshim's poller starts within 100 ms of the first CUDA call */
    burst_then_capture(d, pinned, s);
    usleep(200 * 1000); /* the last timings are collected */

    CK(cu.cuStreamSynchronize(s));
    CK(cu.cuMemFreeHost(pinned));
    CK(cu.cuMemFree(d));
    free(pageable);
    printf("violations %llu\n", violations());
    return violations() == 0 ? 0 : 1;
}
