/* daemon.c - the parent exits as soon as its child has detached (setsid, the way daemons do); the child goes on allocating
 * for 300 ms after that, leaks 555 B in daemon_leak, writes "daemon done" to the file "done" and exits.
 * Build: cc -g -O0 -o daemon daemon.c
 * So a traced run's command ends while one of its processes is still writing its trace. The parent
 * leaks 111 B in parent_leak and prints "parent done".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void parent_leak(void) { sink = malloc(111); }
__attribute__((noinline)) static void daemon_leak(void) { sink = malloc(555); }

int main(void) {
    parent_leak();
    printf("parent done\n");
    fflush(stdout);
    /* The parent returns only once the child has its own session: the test's harness kills what is
     * left of the command's process group when the command ends, and a child not yet detached
     * would be killed with it. */
    int ready[2];
    if (pipe(ready) != 0)
        return 1;
    pid_t pid = fork();
    if (pid != 0) {
        char b;
        close(ready[1]);
        if (pid > 0 && read(ready[0], &b, 1) != 1)
            return 1;
        return pid < 0;
    }
    setsid();
    close(ready[0]);
    if (write(ready[1], "s", 1) != 1)
        return 1;
    close(ready[1]);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (int i = 0; i < 1000; i++)
            free(malloc(16 + i % 300));
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 300000000L);
    daemon_leak();
    FILE *f = fopen("done.tmp", "w");
    if (f) {
        fputs("daemon done\n", f);
        fclose(f);
        rename("done.tmp", "done");
    }
    return 0;
}
