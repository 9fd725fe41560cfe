/* libslowinit.c - a library whose constructor first computes for 200 ms without allocating (as a
 * large C++ library's relocations and static initialisers can, PyTorch's among them), then makes
 * 300000 allocations: all of it while dlopen holds the loader's lock. Loaded by dlopen_busy.c.
 * Build: cc -g -O0 -shared -fPIC -o libslowinit.so libslowinit.c
 */
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((constructor)) static void slow_init(void) {
    double start = now();
    while (now() - start < 0.2) {
    }
    for (int i = 0; i < 300000; i++) {
        free(malloc(32 + i % 64));
    }
}

int lib_ready(void) { return 1; }
