/* rlimit_as.c - an address-space limit of the current size + 512 MiB; malloc returning NULL is handled.
 * Build: cc -g -O0 -o rlimit_as rlimit_as.c
 * Takes 1 MiB blocks until malloc returns NULL (at most 1024), frees them all, allocates again in
 * small blocks and leaks 128 B in after_null_leak. The limit counts from the size the process has
 * when it sets it, so whatever was mapped before does not count; the program must get at least
 * 504 MiB of the 512 (bare it gets 510: the shim's own growth after the limit may cost it a few, not
 * the 64 MiB of a glibc arena for one of the shim's threads). Prints "null handled" and "enough yes".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

void *volatile sink;
static void *blocks[1024];

__attribute__((noinline)) static void after_null_leak(void) { sink = malloc(128); }

int main(void) {
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1)
        return 1;
    fclose(f);
    rlim_t limit = (rlim_t)pages * 4096 + (512ul << 20);
    struct rlimit r = {limit, limit};
    if (setrlimit(RLIMIT_AS, &r) != 0)
        return 1;
    int n = 0;
    while (n < 1024 && (blocks[n] = malloc(1 << 20)) != NULL)
        n++;
    int got_null = n < 1024;
    for (int i = 0; i < n; i++)
        free(blocks[i]);
    for (int i = 0; i < 10000; i++) {
        char *p = malloc(16 + i % 100);
        if (!p)
            return 1;
        free(p);
    }
    after_null_leak();
    printf("%s\n", got_null ? "null handled" : "no null");
    printf("enough %s\n", n >= 504 ? "yes" : "no");
    return 0;
}
