/* churn.c - allocates and frees everything. Build: cc -g -O0 -o churn churn.c
 *
 * Expected `memshim report`: no leak site (host or mmap) whose frames contain any of
 * churn_sizes, churn_realloc, churn_misc, churn_keep_then_free, and these exact heap totals
 * (the program uses no stdio, so libc allocates nothing of its own):
 *   allocations      3756 = 2000 malloc + 200 x (3 realloc + 1 reallocarray) + 100 x 7 misc + 256
 *   frees            3756 = 3156 free() of non-NULL pointers + 600 blocks moved/resized by
 *                           realloc(p != NULL) and reallocarray
 *   allocated_bytes  10395316 (8960980 + 631600 + 766000 + 36736, see each function)
 *   live_bytes 0, live_count 0
 * Produces no output and exits with status 0.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 256

void *volatile sink;

/* 2000 malloc/free pairs, sizes 1 B .. ~200 KB (so some blocks are mmapped by malloc):
 * 8960980 B requested in all. */
__attribute__((noinline)) void churn_sizes(void) {
    for (int i = 0; i < 2000; i++) {
        size_t size = (i % 100 == 0) ? 200000 + (size_t)i : 1 + (size_t)(i * 131) % 5000;
        char *p = malloc(size);
        memset(p, (int)i, size);
        free(p);
    }
}

/* 200 realloc chains 8 -> 100 -> 3000 -> 50 (grow, grow, shrink), freed at the end:
 * 800 allocations, 200 x 3158 = 631600 B. */
__attribute__((noinline)) void churn_realloc(void) {
    for (int i = 0; i < 200; i++) {
        char *p = realloc(NULL, 8);
        memset(p, 1, 8);
        p = realloc(p, 100);
        memset(p, 2, 100);
        p = realloc(p, 3000);
        memset(p, 3, 3000);
        p = reallocarray(p, 10, 5);
        memset(p, 4, 50);
        free(p);
    }
}

/* Every other entry point once per round, each freed: 700 allocations, 766000 B
 * (calloc 10 x (10+i), 1000, 256 x (1 + i%4), 333, 77, pvalloc 5000, strdup 15). */
__attribute__((noinline)) void churn_misc(void) {
    for (int i = 0; i < 100; i++) {
        void *p = calloc(10, 10 + (size_t)i);
        free(p);
        if (posix_memalign(&p, 128, 1000) != 0)
            abort();
        free(p);
        p = aligned_alloc(256, 256 * (1 + (size_t)(i % 4)));
        free(p);
        p = memalign(64, 333);
        free(p);
        p = valloc(77);
        free(p);
        p = pvalloc(5000);
        free(p);
        char *s = strdup("churning along");
        free(s);
        free(NULL);
    }
}

/* Many blocks live at once, then freed in a different order: 256 blocks, 36736 B. */
__attribute__((noinline)) void churn_keep_then_free(void) {
    static void *kept[KEEP];
    for (int i = 0; i < KEEP; i++) {
        kept[i] = malloc(16 + (size_t)i);
        memset(kept[i], 0, 16 + (size_t)i);
    }
    for (int i = 0; i < KEEP; i += 2)
        free(kept[i]);
    for (int i = KEEP - 1; i > 0; i -= 2)
        free(kept[i]);
    sink = kept;
}

int main(void) {
    churn_sizes();
    churn_realloc();
    churn_misc();
    churn_keep_then_free();
    return 0;
}
