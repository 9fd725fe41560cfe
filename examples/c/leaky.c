/* leaky.c - the bundled memshim demo. Build: cc -g -O0 -o leaky leaky.c
 *
 * Expected `memshim report` (leaks.host), sites from this file's functions, exactly:
 *   leak_malloc   300 B in 3 blocks (one site: 3 x malloc(100) from one call site)
 *   leak_calloc   100 B in 4 blocks (one site: 4 x calloc(1, 25))
 *   grow_buffer   256 B in 1 block  (realloc chain 16 -> 64 -> 256; only the last block is live)
 *   leak_aligned  four sites, 1 block each: posix_memalign 4096 B, aligned_alloc 512 B,
 *                 valloc 100 B, memalign 64 B
 *   leak_strdup    12 B in 1 block  (strdup of the 11-char "hello world"; frame 0 is
 *                 strdup/__strdup in libc, frame 1 is leak_strdup)
 *   churn         no site (1000 malloc/free pairs of 1 + (i*37)%3000 B, 1472500 B in all)
 * Total from this file: 5440 B in 13 blocks. leaks.mmap has no site from this file.
 * Prints "leaky: done" to stdout and exits with status 0.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not const, so the compiler cannot turn strdup into malloc + memcpy. */
char greeting[] = "hello world";
void *volatile sink;

__attribute__((noinline)) void leak_malloc(void) {
    for (int i = 0; i < 3; i++) {
        char *p = malloc(100);
        memset(p, 'm', 100);
        sink = p;
    }
}

__attribute__((noinline)) void leak_calloc(void) {
    for (int i = 0; i < 4; i++) {
        char *p = calloc(1, 25);
        p[0] = 'c';
        sink = p;
    }
}

__attribute__((noinline)) void grow_buffer(void) {
    char *p = malloc(16);
    memset(p, 'a', 16);
    p = realloc(p, 64);
    memset(p, 'b', 64);
    p = realloc(p, 256);
    memset(p, 'c', 256);
    sink = p;
}

__attribute__((noinline)) void leak_aligned(void) {
    void *p = NULL;
    if (posix_memalign(&p, 64, 4096) != 0)
        abort();
    memset(p, 1, 4096);
    sink = p;
    p = aligned_alloc(64, 512);
    memset(p, 2, 512);
    sink = p;
    p = valloc(100);
    memset(p, 3, 100);
    sink = p;
    p = memalign(32, 64);
    memset(p, 4, 64);
    sink = p;
}

__attribute__((noinline)) void leak_strdup(void) {
    char *s = strdup(greeting);
    s[0] = 'H';
    sink = s;
}

__attribute__((noinline)) void churn(void) {
    for (int i = 0; i < 1000; i++) {
        size_t size = 1 + (size_t)(i * 37) % 3000;
        char *p = malloc(size);
        memset(p, (int)i, size);
        free(p);
    }
}

int main(void) {
    leak_malloc();
    leak_calloc();
    grow_buffer();
    leak_aligned();
    leak_strdup();
    churn();
    printf("leaky: done\n");
    return 0;
}
