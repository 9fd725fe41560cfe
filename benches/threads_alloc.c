/* threads_alloc.c: T threads (argv[1], default 4) each making N allocations (argv[2], default
 * 500000) of 16 B to 1 KiB through a 6-deep call chain, each thread keeping a ring of 1024 blocks
 * live (the rest freed as they are replaced). Prints allocations per second of wall time. With T=1
 * and T=4 side by side it tells whether threads serialise on a profiler: the ratio to the bare run
 * should be the same. Deterministic (a fixed LCG per thread). Build: cc -O2 -g -pthread threads_alloc.c
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KEEP 1024

static long per_thread;

struct ring {
    void *slots[KEEP];
    unsigned long long state;
};

__attribute__((noinline)) static void leaf(struct ring *r, long i) {
    r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t size = 16 + (r->state >> 33) % (1024 - 16 + 1);
    unsigned slot = (unsigned)(i % KEEP);
    free(r->slots[slot]);
    char *p = malloc(size);
    p[0] = (char)i;
    r->slots[slot] = p;
}

#define LEVEL(n, next)                                                                               \
    __attribute__((noinline)) static void level##n(struct ring *r, long i) {                         \
        next(r, i);                                                                                  \
        __asm__ volatile("" ::: "memory");                                                           \
    }
LEVEL(1, leaf)
LEVEL(2, level1)
LEVEL(3, level2)
LEVEL(4, level3)
LEVEL(5, level4)

static void *work(void *arg) {
    struct ring *r = arg;
    for (long i = 0; i < per_thread; i++) {
        level5(r, i);
    }
    for (int i = 0; i < KEEP; i++) {
        free(r->slots[i]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    per_thread = argc > 2 ? atol(argv[2]) : 500000;
    if (threads < 1 || threads > 64) return 2;
    struct ring *rings = calloc((size_t)threads, sizeof *rings);
    pthread_t t[64];
    if (!rings) return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++) {
        rings[i].state = 88172645463325252ULL + (unsigned long long)i;
        if (pthread_create(&t[i], NULL, work, &rings[i]) != 0) return 1;
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    printf("threads %d allocations %ld allocs_per_s %.0f\n", threads, per_thread * threads,
           (double)(per_thread * threads) / s);
    free(rings);
    return 0;
}
