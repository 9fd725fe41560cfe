/* growing.c: a host leak that keeps climbing, next to a big allocation made once and kept.
 *
 * Expected report:
 * - growth.host: exactly one growing user site, `step_leak`: 20 steps of 100 KiB (102400 B) each,
 *   20 ms apart, all kept: from 102400 B to 2048000 B, still holding 2048000 B at the end.
 * - `load_table` (one 4 MiB block allocated at the start and kept) is a leak, not growth.
 * - `scratch` (allocated and freed every step) is neither.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS 20

static void *kept[STEPS];

__attribute__((noinline)) void *step_leak(size_t n) {
    void *p = malloc(n);
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) void *load_table(void) {
    void *p = malloc(4 << 20);
    memset(p, 2, 4 << 20);
    return p;
}

__attribute__((noinline)) void scratch(void) {
    char *p = malloc(200000);
    memset(p, 3, 200000);
    free(p);
}

int main(void) {
    static void *table;
    table = load_table();
    struct timespec step = {0, 20 * 1000 * 1000};
    for (int i = 0; i < STEPS; i++) {
        kept[i] = step_leak(102400);
        scratch();
        nanosleep(&step, NULL);
    }
    return table == NULL;
}
