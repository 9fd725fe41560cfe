/* Allocates 3000 blocks of 100 bytes in a burst, then dies at once, the way its argument says:
 * `segv` (a null write), `abort`, `term` (raise(SIGTERM)), or `default` (sets SIGSEGV's default
 * disposition itself, checks that a query reports the default, then writes through null).
 * Under memshim every one of the 3000 allocations must be in the trace: the last moment before a
 * crash is the one a user needs. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink;

static void burst(void) {
    for (int i = 0; i < 3000; i++) sink = malloc(100);
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "segv";
    burst();
    if (strcmp(how, "default") == 0) {
        struct sigaction sa;
        signal(SIGSEGV, SIG_DFL);
        sigaction(SIGSEGV, NULL, &sa);
        printf("default: %d\n", sa.sa_handler == SIG_DFL && sa.sa_flags == 0);
        fflush(stdout);
        how = "segv";
    }
    if (strcmp(how, "segv") == 0) *(volatile int *)0 = 1;
    if (strcmp(how, "abort") == 0) abort();
    if (strcmp(how, "term") == 0) raise(SIGTERM);
    return 0;
}
