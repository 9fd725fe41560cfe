/* stack_overflow.c - recursion that allocates in every frame until the stack overflows.
 * Build: cc -g -O0 -o stack_overflow stack_overflow.c
 * Each frame leaks 100 B in frame_leak and keeps 1 KiB of stack, on a thread with a 1 MiB stack.
 * With argv[1] "handled" the program catches the overflow with its own SIGSEGV handler on an
 * alternate stack (SA_ONSTACK), which writes "overflow caught" and _exits with 7; otherwise it dies
 * of SIGSEGV. A profiler's own crash handling must cope with a signal that comes with no stack left.
 * Prints "diving" first.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile sink;
static volatile int deeper = 1; /* always 1: keeps the compiler from calling the recursion infinite */

__attribute__((noinline)) static void frame_leak(void) { sink = malloc(100); }

__attribute__((noinline)) static int dive(int depth) {
    volatile char pad[1024];
    pad[0] = (char)depth;
    frame_leak();
    return deeper ? dive(depth + 1) + pad[0] : pad[0];
}

static void on_segv(int sig) {
    (void)sig;
    const char msg[] = "overflow caught\n";
    write(1, msg, sizeof msg - 1);
    _exit(7);
}

static void *body(void *arg) {
    if (arg) {
        static char alt[64 * 1024];
        stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
        sigaltstack(&ss, NULL);
    }
    return (void *)(long)dive(0);
}

int main(int argc, char **argv) {
    int handled = argc > 1 && strcmp(argv[1], "handled") == 0;
    if (handled) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_segv;
        sa.sa_flags = SA_ONSTACK;
        sigaction(SIGSEGV, &sa, NULL);
    }
    printf("diving\n");
    fflush(stdout);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 1 << 20);
    pthread_t t;
    if (pthread_create(&t, &a, body, handled ? (void *)1 : NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    return 0;
}
