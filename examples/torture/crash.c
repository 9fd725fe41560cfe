/* crash.c - a burst of allocations, then the death argv[1] names, at once.
 * Build: cc -g -O0 -o crash crash.c
 * Deaths: abort (abort()), segv (a load through a null pointer), term (kill(getpid(), SIGTERM)).
 * With segv_handled and term_handled the program has its own handler (installed before the burst),
 * which writes "handled SIGNAME" and _exits with 42: a profiler's own crash handling must hand the
 * signal on to it. With segv_reraise the handler writes "reraising", restores the default action and
 * raises SIGSEGV again, so the process dies of it (the common clean-up-then-die pattern).
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

static void reraise(int sig) {
    const char msg[] = "reraising\n";
    write(1, msg, sizeof msg - 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_signal(int sig) {
    const char *msg = sig == SIGSEGV ? "handled SIGSEGV\n" : "handled SIGTERM\n";
    write(1, msg, strlen(msg));
    _exit(42);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    const char *death = argv[1];
    if (strcmp(death, "segv_handled") == 0 || strcmp(death, "term_handled") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigaction(death[0] == 's' ? SIGSEGV : SIGTERM, &sa, NULL);
        death = death[0] == 's' ? "segv" : "term";
    } else if (strcmp(death, "segv_reraise") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = reraise;
        sigaction(SIGSEGV, &sa, NULL);
        death = "segv";
    }
    printf("burst\n");
    fflush(stdout);
    last_burst();
    if (strcmp(death, "abort") == 0)
        abort();
    if (strcmp(death, "segv") == 0)
        *(volatile int *)keep[0] = *(volatile int *)0;
    if (strcmp(death, "term") == 0)
        kill(getpid(), SIGTERM);
    return 2;
}
