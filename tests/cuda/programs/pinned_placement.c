/* pinned_placement.c - a large pinned buffer, touched and kept 250 ms, so memshim samples which NUMA
 * node its pages are on (as it does for large heap blocks).
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/pinned_placement
 *
 * Expected memshim report: numa.placements has one "pinned" block of 4194304 bytes from
 * allocate_pinned, 16 pages sampled, all resident on one node (this machine's). Prints "done"; exit 0.
 */
#include "cuda_min.h"
#include <string.h>
#include <time.h>

__attribute__((noinline)) void *allocate_pinned(size_t n) {
    void *p;
    CK(cu.cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_PORTABLE));
    memset(p, 1, n);
    return p;
}

int main(void) {
    cuda_min_init();
    void *p = allocate_pinned(4u << 20);
    struct timespec ts = {0, 250 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CK(cu.cuMemFreeHost(p));
    printf("done\n");
    return 0;
}
