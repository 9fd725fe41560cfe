/* sigalrm.c - a SIGALRM handler that allocates, at a high rate (setitimer, 50 us), while main allocates.
 * Build: cc -g -O0 -o sigalrm sigalrm.c
 * Undefined in C, common in practice. glibc survives it bare because the handler and main use
 * different size classes, each served from the thread's own cache without a lock: main churns 64 B
 * blocks, the handler 200 B ones (4 warmed up first). main runs 3000000 malloc/free pairs, then stops
 * the timer; the handler leaks nothing. Prints "sigalrm done" and, when at least 100 signals came,
 * "signals many".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

void *volatile sink;
static volatile sig_atomic_t count;

__attribute__((noinline)) static void alarm_main_leak(void) { sink = malloc(4000); }

static void on_alarm(int sig) {
    (void)sig;
    char *p = malloc(200);
    p[0] = 1;
    free(p);
    count++;
}

int main(void) {
    void *warm[4];
    for (int i = 0; i < 4; i++)
        warm[i] = malloc(200);
    for (int i = 0; i < 4; i++)
        free(warm[i]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (int i = 0; i < 3000000; i++) {
        char *p = malloc(64);
        p[0] = 1;
        sink = p;
        free(p);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    alarm_main_leak();
    printf("sigalrm done\n");
    if (count >= 100)
        printf("signals many\n");
    return 0;
}
