/* grow_release.c: growth given back before the end (the losses kept with their graph, in C).
 *
 * Expected report:
 * - growth.released: one host site, `keep_step`: 30 steps of 256 KiB (262144 B), 10 ms apart, from
 *   262144 B to 7864320 B, then all freed by `release_all` (released when the 16th free leaves
 *   less than half), 0 B held at the end; then 300 ms of idling holding none of it;
 * - growth.host (still growing at the end): none of these.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS 30

static void *kept[STEPS];

__attribute__((noinline)) void *keep_step(size_t n) {
    void *p = malloc(n);
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) void release_all(void) {
    for (int i = 0; i < STEPS; i++)
        free(kept[i]);
}

int main(void) {
    struct timespec step = {0, 10 * 1000 * 1000};
    for (int i = 0; i < STEPS; i++) {
        kept[i] = keep_step(256 << 10);
        nanosleep(&step, NULL);
    }
    release_all();
    struct timespec idle = {0, 300 * 1000 * 1000};
    nanosleep(&idle, NULL);
    return 0;
}
