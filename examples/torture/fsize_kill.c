/* fsize_kill.c - limits the size of the files it writes to 64 KiB through the raw system call
 * (syscall(SYS_prlimit64), which no libc wrapper sees), allocates a lot, keeps a burst of blocks,
 * then dies of SIGKILL: no handler, no exit path runs.
 * Build: cc -g -O0 -o fsize_kill fsize_kill.c
 * 300000 malloc/free pairs, then 3000 blocks of 100 B kept from burst_leak; prints "burst done"
 * (flushed), pauses 80 ms and kills itself. The trace passes the limit long before the end, and no
 * end is ever written: what the shim stored must still be read whole, the last burst included.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void *volatile keep[3000];

__attribute__((noinline)) static void burst_leak(void) {
    for (int i = 0; i < 3000; i++)
        keep[i] = malloc(100);
}

int main(void) {
    struct rlimit r = {64 << 10, 64 << 10};
    if (syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, &r, NULL) != 0)
        return 1;
    for (int i = 0; i < 300000; i++) {
        char *p = malloc(16 + i % 500);
        p[0] = 1;
        free(p);
    }
    burst_leak();
    printf("burst done\n");
    fflush(stdout);
    struct timespec pause = {0, 80 * 1000 * 1000};
    nanosleep(&pause, NULL);
    kill(getpid(), SIGKILL);
    return 0;
}
