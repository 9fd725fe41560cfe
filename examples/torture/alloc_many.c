/* alloc_many.c - the child program of the spawn tests: 200000 malloc/free pairs, then a leak.
 * Build: cc -g -O0 -o alloc_many alloc_many.c
 * Leaks 444 B in target_leak; prints "alloc_many ARGC" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

__attribute__((noinline)) static void target_leak(void) { sink = malloc(444); }

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < 200000; i++) {
        char *p = malloc(16 + i % 200);
        p[0] = 1;
        free(p);
    }
    target_leak();
    printf("alloc_many %d\n", argc);
    return 0;
}
