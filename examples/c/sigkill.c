/* sigkill.c - leaks, waits for the shim's periodic flush, then kills itself with SIGKILL.
 * Build: cc -g -O0 -o sigkill sigkill.c
 *
 * Expected `memshim report`: truncated=true, end=null; leaks.host has exactly one site from
 * this file: doomed_leak 8991 B in 9 blocks (9 x malloc(999)), symbolized (function
 * "doomed_leak") although the process never got to exit. `memshim run` exits with 137.
 * Prints nothing.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *volatile sink[9];

__attribute__((noinline)) void doomed_leak(void) {
    for (int i = 0; i < 9; i++) {
        char *p = malloc(999);
        memset(p, i, 999);
        sink[i] = p;
    }
}

int main(void) {
    doomed_leak();
    /* 400 ms: several of the shim's 100 ms flush periods. */
    struct timespec ts = {0, 400 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    raise(SIGKILL);
    return 1;
}
