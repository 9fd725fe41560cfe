/* managed_faults.c - managed memory whose page faults and migrations CUPTI counts; the stand-in
 * CUPTI (libcupti_standin.c) reports exactly what this program injects for its allocations.
 * Build: tests/cuda/build.sh OUT. Run: MEMSHIM_CUPTI=1 LD_LIBRARY_PATH=OUT memshim run -- OUT/managed_faults
 *
 * alloc_features: 8 MiB managed;  alloc_labels: 2 MiB managed (both through cuMemAllocManaged).
 * Injected after memshim enabled the counters (the program waits until injection is accepted):
 *   features: HtoD 3 x 2 MiB = 6291456 B, GPU page faults 3 x 8 = 24, thrashing 2
 *   labels:   DtoH 1 x 1 MiB = 1048576 B, CPU page faults 5 (one per record)
 *   an address no allocation holds: HtoD 4096 B (unattributed)
 * Half before a 1.2 s pause (memshim flushes CUPTI every second), half after (flushed at exit).
 * Expected device.unified_memory: cupti "on", htod 6295552, dtoh 1048576, gpu_page_faults 24,
 * cpu_page_faults 5, thrashing 2; sites: alloc_features first (6291456 B HtoD, 24 GPU faults,
 * 2 thrashing), then alloc_labels (1048576 B DtoH, 5 CPU faults: 5 records). Prints "injected 15"; exit 0.
 * With MANAGED_FAULTS_OFF=1 (memshim's counters expected off) it injects nothing, prints
 * "injected 0" and exits 0.
 */
#include "cuda_min.h"
#include <unistd.h>

#define MiB (1024u * 1024u)
typedef int (*inject_fn)(unsigned, unsigned long long, unsigned long long, unsigned, unsigned);

__attribute__((noinline)) CUdeviceptr alloc_features(void) {
    CUdeviceptr p;
    CK(cu.cuMemAllocManaged(&p, 8 * MiB, CU_MEM_ATTACH_GLOBAL));
    return p;
}

__attribute__((noinline)) CUdeviceptr alloc_labels(void) {
    CUdeviceptr p;
    CK(cu.cuMemAllocManaged(&p, 2 * MiB, CU_MEM_ATTACH_GLOBAL));
    return p;
}

int main(void) {
    cuda_min_init();
    CUdeviceptr features = alloc_features(), labels = alloc_labels();
    if (getenv("MANAGED_FAULTS_OFF")) {
        usleep(300 * 1000); /* long enough for memshim to have tried to start CUPTI */
        printf("injected 0\n");
        CK(cu.cuMemFree(labels));
        CK(cu.cuMemFree(features));
        return 0;
    }
    void *cupti = dlopen("libcupti.so", RTLD_NOW);
    EXPECT(cupti != NULL);
    inject_fn inject = (inject_fn)dlsym(cupti, "standin_um_event");
    EXPECT(inject != NULL);
    /* memshim enables the counters within about 100 ms of the first CUDA call. */
    int waited = 0;
    while (inject(1, features, 2 * MiB, 0, 1) != 0) {
        EXPECT(waited++ < 300);
        usleep(10 * 1000);
    }
    int n = 1;
    n += !inject(4, features + 2 * MiB, 8, 1, 1);
    n += !inject(2, labels, MiB, 1, 0);
    /* A CPU fault's value is the faulting instruction's address: each record is one fault. */
    n += !inject(3, labels, 0x401234, 0, 0);
    n += !inject(3, labels + 4096, 0x401234, 0, 0);
    n += !inject(5, features, 1, 0, 1);
    usleep(1200 * 1000);
    n += !inject(1, features + 2 * MiB, 2 * MiB, 0, 1);
    n += !inject(1, features + 4 * MiB, 2 * MiB, 0, 1);
    n += !inject(4, features + 4 * MiB, 8, 1, 1);
    n += !inject(4, features + 6 * MiB, 8, 1, 1);
    n += !inject(3, labels + 8192, 0x401238, 0, 0);
    n += !inject(3, labels + 12288, 0x401238, 0, 0);
    n += !inject(3, labels + 16384, 0x401238, 0, 0);
    n += !inject(5, features + 2 * MiB, 1, 0, 1);
    n += !inject(1, 0x10, 4096, 0, 1); /* no managed allocation here */
    printf("injected %d\n", n);
    CK(cu.cuMemFree(labels));
    CK(cu.cuMemFree(features));
    return n == 15 ? 0 : 1;
}
