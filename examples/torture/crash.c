/* crash.c - a burst of allocations, then the death argv[1] names, at once.
 * Build: cc -g -O0 -o crash crash.c
 * Deaths: abort (abort()), segv (a store through a null pointer), term (kill(getpid(), SIGTERM)).
 * Prints "burst" (flushed), then keeps 3000 blocks of 100 B from last_burst (300000 B, all live at the
 * death) and dies at once: the last allocations must be in the trace.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[3000];

__attribute__((noinline)) static void last_burst(void) {
    for (int i = 0; i < 3000; i++)
        keep[i] = malloc(100);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    printf("burst\n");
    fflush(stdout);
    last_burst();
    if (strcmp(argv[1], "abort") == 0)
        abort();
    if (strcmp(argv[1], "segv") == 0)
        *(volatile int *)keep[0] = *(volatile int *)0;
    if (strcmp(argv[1], "term") == 0)
        kill(getpid(), SIGTERM);
    return 2;
}
