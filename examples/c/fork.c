/* fork.c - a leak before fork in the parent, one in the child.
 * Build: cc -g -O0 -o fork fork.c
 *
 * Expected: two traces, both with exe basename "fork", the parent first.
 *   parent (forked=false, end="exit"): sites from this file exactly: parent_leak 111 B in 1 block
 *   child  (forked=true, ppid = parent's pid, end="exit"): sites from this file exactly:
 *          child_leak 222 B in 1 block (the parent's pre-fork blocks are not in the child's trace)
 * The child exits with exit(0); the parent waits for it and exits with status 0.
 * Prints nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) void parent_leak(void) {
    char *p = malloc(111);
    memset(p, 'p', 111);
    sink = p;
}

__attribute__((noinline)) void child_leak(void) {
    char *p = malloc(222);
    memset(p, 'c', 222);
    sink = p;
}

int main(void) {
    parent_leak();
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        child_leak();
        exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
