/* rank_alloc.c - one rank of a pretend distributed job: reads RANK (as torchrun's workers do) and leaks
 * (RANK + 1) * 64 MiB of device memory with one cuMemAlloc, so ranks differ.
 * Build: tests/cuda/build.sh OUT. Run: RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LD_LIBRARY_PATH=OUT OUT/rank_alloc
 *
 * Expected memshim report, with ranks 0 and 1 launched together: the ranks table has both, rank 0 with
 * 64 MiB of device memory leaked at its peak and rank 1 with 128 MiB, and an imbalance finding
 * ("rank 1 has 128.0 MiB, rank 0 has 64.0 MiB (2.0x)"). Prints "rank N done"; exit 0.
 */
#include "cuda_min.h"
#include <stdlib.h>

__attribute__((noinline)) void allocate_for_rank(int rank) {
    CUdeviceptr p;
    CK(cu.cuMemAlloc(&p, (size_t)(rank + 1) * 64 * 1024 * 1024));
}

int main(void) {
    const char *r = getenv("RANK");
    int rank = r ? atoi(r) : 0;
    cuda_min_init();
    allocate_for_rank(rank);
    printf("rank %d done\n", rank);
    return 0;
}
