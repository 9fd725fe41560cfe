/* raw_exit_group.c - ends the process through glibc's syscall(SYS_exit_group) right after a burst of
 * allocations: no exit handler, no destructor runs, as with _exit. Build: cc -g -O0 -o raw_exit_group
 * raw_exit_group.c
 * Keeps 1000 blocks of 100 B from exit_leak, prints "exiting 3" (flushed) and exits with status 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

void *volatile keep[1000];

__attribute__((noinline)) static void exit_leak(void) {
    for (int i = 0; i < 1000; i++)
        keep[i] = malloc(100);
}

int main(void) {
    exit_leak();
    printf("exiting 3\n");
    fflush(stdout);
    syscall(SYS_exit_group, 3);
    return 0;
}
