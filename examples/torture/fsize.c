/* fsize.c - limits the size of the files it writes (RLIMIT_FSIZE 64 KiB), then allocates a lot and
 * writes a small file of its own.
 * Build: cc -g -O0 -o fsize fsize.c
 * A write past the limit raises SIGXFSZ, whose default action ends the process: a profiler's trace
 * written under the program's limit must not be what kills it. 300000 malloc/free pairs, a leak of
 * 64 B in fsize_leak, then "data" gets 100 bytes. Prints "wrote 100".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

void *volatile sink;

__attribute__((noinline)) static void fsize_leak(void) { sink = malloc(64); }

int main(void) {
    struct rlimit r = {64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &r) != 0)
        return 1;
    for (int i = 0; i < 300000; i++) {
        char *p = malloc(16 + i % 500);
        p[0] = 1;
        free(p);
    }
    fsize_leak();
    char buf[100];
    memset(buf, 'x', sizeof buf);
    FILE *f = fopen("data", "w");
    if (!f)
        return 1;
    size_t n = fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    printf("wrote %zu\n", n);
    return 0;
}
