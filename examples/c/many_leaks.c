/* many_leaks.c: many small leaks and a few big ones, for sampling.
 *
 * Expected report: host leaks from `leak_many` 20000 blocks x 100 B = 2000000 B, from `leak_big`
 * 5 blocks x 1 MiB = 5242880 B, plus `churn_small` allocating and freeing 200000 x 64 B (no leak).
 * With MEMSHIM_SAMPLE_BYTES set, the totals (leaks.host.bytes/count, heap allocations and peak) are
 * exactly those of an unsampled run; the per-site figures are estimates: `leak_big`'s blocks are far
 * larger than any sane sampling interval, so they are always sampled and estimated exactly.
 * In the thin sampling mode (the default with MEMSHIM_SAMPLE_BYTES) live bytes are usable sizes: the
 * program prints the sum of malloc_usable_size over its leaked blocks, and stdout is unbuffered so
 * that those are the only live blocks.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *many[20000];
static void *big[5];

__attribute__((noinline)) void leak_many(void) {
    for (int i = 0; i < 20000; i++) {
        many[i] = malloc(100);
        memset(many[i], 1, 100);
    }
}

__attribute__((noinline)) void leak_big(void) {
    for (int i = 0; i < 5; i++) {
        big[i] = malloc(1 << 20);
        memset(big[i], 2, 1 << 20);
    }
}

__attribute__((noinline)) void churn_small(void) {
    for (int i = 0; i < 200000; i++) {
        char *p = malloc(64);
        p[0] = (char)i;
        free(p);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    leak_many();
    churn_small();
    leak_big();
    size_t usable = 0;
    for (int i = 0; i < 20000; i++) {
        usable += malloc_usable_size(many[i]);
    }
    for (int i = 0; i < 5; i++) {
        usable += malloc_usable_size(big[i]);
    }
    printf("many_leaks: done, leaked usable %zu\n", usable);
    return many[0] == NULL || big[0] == NULL;
}
