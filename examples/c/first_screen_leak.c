/* first_screen_leak.c - a leak for the report's first screen. Build: cc -g -O0 -o first_screen_leak first_screen_leak.c
 *
 * Expected `memshim report`: the verdict's one item is the leak, 3.0 MiB + 100 B in 4 heap blocks
 * from 2 sites (keep_records: 3 x 1 MiB, never freed; keep_name: 100 B), the most at keep_records;
 * the heap's peak is those 4 blocks. It writes nothing, so the C library keeps no stdio buffer.
 */
#include <stdlib.h>
#include <string.h>

void *volatile kept[4];

__attribute__((noinline)) void keep_records(void) {
    for (int i = 0; i < 3; i++) {
        char *p = malloc(1 << 20);
        memset(p, i, 1 << 20);
        kept[i] = p;
    }
}

__attribute__((noinline)) void keep_name(void) {
    char *p = malloc(100);
    memset(p, 'n', 100);
    kept[3] = p;
}

int main(void) {
    keep_records();
    keep_name();
    return 0;
}
