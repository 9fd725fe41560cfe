/* fork_children.c: forks C children (argv[1], default 50) one after another, each making N
 * allocations (argv[2], default 20000) of 16 B to 4 KiB through a 4-deep call chain before it exits;
 * the parent waits for each. Every child is a process with a trace of its own under a profiler, so
 * this measures what a profiler costs per process (its start, and its work at each child's exit).
 * Build: cc -O2 -g fork_children.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP 256

static void *slots[KEEP];
static unsigned long long state = 88172645463325252ULL;

__attribute__((noinline)) static void leaf(long i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t size = 16 + (state >> 33) % (4096 - 16 + 1);
    unsigned slot = (unsigned)(i % KEEP);
    free(slots[slot]);
    char *p = malloc(size);
    p[0] = (char)i;
    slots[slot] = p;
}

__attribute__((noinline)) static void level1(long i) { leaf(i); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void level2(long i) { level1(i); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void child_work(long n) {
    for (long i = 0; i < n; i++) level2(i);
}

int main(int argc, char **argv) {
    int children = argc > 1 ? atoi(argv[1]) : 50;
    long n = argc > 2 ? atol(argv[2]) : 20000;
    int failed = 0;
    for (int c = 0; c < children; c++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            child_work(n);
            exit(0);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    printf("children %d failed %d\n", children, failed);
    return failed != 0;
}
