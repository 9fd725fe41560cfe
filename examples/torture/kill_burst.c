/* kill_burst.c - a burst of allocations, a pause of 80 ms, then SIGKILL to itself: no handler, no
 * exit path runs. Build: cc -g -O0 -o kill_burst kill_burst.c
 * Keeps 3000 blocks of 100 B from burst_leak, prints "burst done" (flushed), pauses 80 ms and dies of
 * SIGKILL.
 * Whatever reached the shim's writer before the pause must be in the trace: the writer puts it on
 * disk when its queue goes quiet, not at its next 100 ms frame.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *volatile keep[3000];

__attribute__((noinline)) static void burst_leak(void) {
    for (int i = 0; i < 3000; i++)
        keep[i] = malloc(100);
}

int main(void) {
    burst_leak();
    printf("burst done\n");
    fflush(stdout);
    struct timespec pause = {0, 80 * 1000 * 1000};
    nanosleep(&pause, NULL);
    kill(getpid(), SIGKILL);
    return 0;
}
