/* exec.c - leaks, then a forked child execs the program named by argv[1] (exec_target).
 * Build: cc -g -O0 -o exec exec.c   Run: ./exec /abs/path/to/exec_target
 *
 * Expected traces:
 *   exec (forked=false, end="exit"): sites from this file exactly: before_exec 333 B in 1 block
 *   exec (forked=true, end="exec"), if the shim writes one for the child: no site from
 *        before_exec or target_leak (it allocates nothing between fork and exec)
 *   exec_target (pid = the forked child's pid, end="exit"): target_leak 444 B in 1 block
 *        (see exec_target.c), and no before_exec site.
 * The parent waits for the child and exits with status 0 when the child exited with 0.
 * Prints nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) void before_exec(void) {
    char *p = malloc(333);
    memset(p, 'b', 333);
    sink = p;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/exec_target\n", argv[0]);
        return 2;
    }
    before_exec();
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        char *args[] = {argv[1], NULL};
        execv(argv[1], args);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
