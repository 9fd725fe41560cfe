/* exec_chain.c - execs itself N times (argv[1], counting down), leaking at each step.
 * Build: cc -g -O0 -o exec_chain exec_chain.c
 * Every step leaks 100 B in step_leak and 1000 malloc/free pairs, prints "step N" and execv's itself
 * with N-1; step 0 prints "step 0" and exits 0. So `exec_chain 5` is 6 traced images, each with
 * exactly one 100 B block leaked in step_leak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void step_leak(void) { sink = malloc(100); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 0;
    for (int i = 0; i < 1000; i++) {
        char *p = malloc(24 + i);
        p[0] = 1;
        free(p);
    }
    step_leak();
    printf("step %d\n", n);
    fflush(stdout);
    if (n == 0)
        return 0;
    char next[16];
    snprintf(next, sizeof next, "%d", n - 1);
    char *args[] = {argv[0], next, NULL};
    execv("/proc/self/exe", args);
    perror("execv");
    return 127;
}
