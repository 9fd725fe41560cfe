/* spawn_child.c - start argv[2] (alloc_many) with the way argv[1] names, wait for it, exit with its status.
 * Build: cc -g -O0 -o spawn_child spawn_child.c
 * Ways: vfork (vfork + execv), posix_spawn, clone (the raw clone system call with SIGCHLD: no fork
 * handler runs), sys_fork (syscall(SYS_fork)). With clone and sys_fork the child itself first makes
 * 200000 malloc/free pairs and leaks 555 B in clone_child_leak, then exits 0 with exit() (so a
 * channel nobody drains would hang it).
 * The parent leaks 333 B in parent_leak and prints "WAY status 0".
 */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
void *volatile sink;

__attribute__((noinline)) static void parent_leak(void) { sink = malloc(333); }
__attribute__((noinline)) static void clone_child_leak(void) { sink = malloc(555); }

static void child_work(void) {
    for (int i = 0; i < 200000; i++) {
        char *p = malloc(16 + i % 200);
        p[0] = 1;
        free(p);
    }
    clone_child_leak();
    exit(0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s vfork|posix_spawn|clone|sys_fork /path/to/alloc_many\n", argv[0]);
        return 2;
    }
    parent_leak();
    fflush(stdout);
    char *args[] = {argv[2], NULL};
    pid_t pid = -1;
    if (strcmp(argv[1], "vfork") == 0) {
        pid = vfork();
        if (pid == 0) {
            execv(argv[2], args);
            _exit(127);
        }
    } else if (strcmp(argv[1], "posix_spawn") == 0) {
        if (posix_spawn(&pid, argv[2], NULL, NULL, args, environ) != 0)
            return 1;
    } else if (strcmp(argv[1], "clone") == 0) {
        pid = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
        if (pid == 0)
            child_work();
    } else if (strcmp(argv[1], "sys_fork") == 0) {
        pid = (pid_t)syscall(SYS_fork);
        if (pid == 0)
            child_work();
    } else {
        return 2;
    }
    if (pid < 0)
        return 1;
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    printf("%s status %d\n", argv[1], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}
