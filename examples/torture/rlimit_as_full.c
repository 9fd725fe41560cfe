/* rlimit_as_full.c - an address-space limit of the current size + 32 MiB filled to the last byte with small
 * blocks, so that the shim's own memory runs out too; malloc returning NULL is handled.
 * Build: cc -g -O0 -o rlimit_as_full rlimit_as_full.c
 * Takes 1000-byte blocks until malloc returns NULL, frees them all, then allocates and frees again
 * and leaks 64 B in full_leak. Prints "null handled", "again ok" and whether it got at least 24 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

void *volatile sink;

__attribute__((noinline)) static void full_leak(void) { sink = malloc(64); }

int main(void) {
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1)
        return 1;
    fclose(f);
    rlim_t limit = (rlim_t)pages * 4096 + (32ul << 20);
    struct rlimit r = {limit, limit};
    if (setrlimit(RLIMIT_AS, &r) != 0)
        return 1;
    void **head = NULL;
    long n = 0;
    for (;;) {
        void **b = malloc(1000);
        if (!b)
            break;
        *b = head;
        head = b;
        n++;
    }
    while (head) {
        void **next = *head;
        free(head);
        head = next;
    }
    for (int i = 0; i < 10000; i++) {
        char *p = malloc(16 + i % 100);
        if (!p)
            return 1;
        free(p);
    }
    full_leak();
    printf("null handled\nagain ok\n");
    printf("24 MiB %s\n", n * 1000 >= (24l << 20) ? "yes" : "no");
    return 0;
}
