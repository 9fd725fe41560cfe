/* malloc_heavy.c: the workload of the performance issue: 2 million allocations of 16 B to 4 KiB
 * through a 14-deep call chain, 65,536 of them kept alive at the end (the rest freed as they are
 * replaced). Deterministic (a fixed LCG), single-threaded. Build: cc -O2 -g malloc_heavy.c
 * Optional argv[1]: number of allocations (default 2000000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 65536

static void *slots[KEEP];
static unsigned long long state = 88172645463325252ULL;

static unsigned next_rand(void) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(state >> 33);
}

__attribute__((noinline)) static void leaf(long i) {
    size_t size = 16 + next_rand() % (4096 - 16 + 1);
    unsigned slot = (unsigned)(i % KEEP);
    free(slots[slot]);
    char *p = malloc(size);
    p[0] = (char)i;
    slots[slot] = p;
}

/* 13 more distinct frames above `leaf`, so every allocation has a 14-deep chain of the program's own. */
#define LEVEL(n, next)                                                                               \
    __attribute__((noinline)) static void level##n(long i) {                                         \
        next(i);                                                                                     \
        __asm__ volatile("" ::: "memory");                                                           \
    }
LEVEL(1, leaf)
LEVEL(2, level1)
LEVEL(3, level2)
LEVEL(4, level3)
LEVEL(5, level4)
LEVEL(6, level5)
LEVEL(7, level6)
LEVEL(8, level7)
LEVEL(9, level8)
LEVEL(10, level9)
LEVEL(11, level10)
LEVEL(12, level11)
LEVEL(13, level12)

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    for (long i = 0; i < n; i++) {
        level13(i);
    }
    unsigned long long sum = 0;
    for (int i = 0; i < KEEP; i++) {
        sum += (unsigned char)((char *)slots[i])[0];
    }
    printf("allocations %ld kept %d checksum %llu\n", n, KEEP, sum);
    return 0;
}
