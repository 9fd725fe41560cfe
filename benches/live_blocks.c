/* live_blocks.c: the report-at-scale workload of the performance issue: N blocks (argv[1], default
 * 3000000) live at once, allocated from a handful of call sites with sizes of 16-64 B, then all freed
 * in a shuffled order. Deterministic (a fixed LCG), single-threaded. Build: cc -O2 -g live_blocks.c
 * Optional argv[2]: "keep" leaves every block live at exit (all of them leaks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long state = 88172645463325252ULL;

static unsigned next_rand(void) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(state >> 33);
}

__attribute__((noinline)) static void *site_a(void) { return malloc(16 + next_rand() % 49); }
__attribute__((noinline)) static void *site_b(void) { return malloc(32); }
__attribute__((noinline)) static void *site_c(void) { return malloc(24 + 8 * (next_rand() % 4)); }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000000;
    int keep = argc > 2 && strcmp(argv[2], "keep") == 0;
    void **blocks = calloc((size_t)n, sizeof *blocks);
    if (!blocks) return 1;
    for (long i = 0; i < n; i++) {
        unsigned r = next_rand() % 8;
        char *p = r < 5 ? site_a() : r < 7 ? site_b() : site_c();
        if (!p) return 1;
        p[0] = (char)i;
        blocks[i] = p;
    }
    if (!keep) {
        for (long i = n - 1; i > 0; i--) {
            long j = (long)(next_rand() % (unsigned)(i + 1));
            void *t = blocks[i];
            blocks[i] = blocks[j];
            blocks[j] = t;
        }
        for (long i = 0; i < n; i++) free(blocks[i]);
    }
    free(blocks);
    printf("%ld blocks\n", n);
    return 0;
}
