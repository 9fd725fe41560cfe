/* vfork_alloc.c - a vfork child that allocates before it execs argv[1] (alloc_many), as old code
 * that builds the child's argument list after vfork does (undefined, works with glibc: the child
 * borrows the parent's memory and heap until the exec).
 * Build: cc -g -O0 -o vfork_alloc vfork_alloc.c
 * The child mallocs 8 argument strings (100 B each, never freed: they belong to the parent's heap),
 * then execs. The parent leaks 333 B in parent_leak. Prints "alloc_many 1" (from the child) and
 * "vfork status 0".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void parent_leak(void) { sink = malloc(333); }

__attribute__((noinline)) static char *child_arg(const char *s) {
    char *p = malloc(100);
    strcpy(p, s);
    return p;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    parent_leak();
    fflush(stdout);
    pid_t pid = vfork();
    if (pid == 0) {
        char *args[2];
        for (int i = 0; i < 8; i++)
            args[0] = child_arg(argv[1]);
        args[1] = NULL;
        execv(args[0], args);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 1;
    printf("vfork status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}
