/* exec_fail.c - every exec call fails (no such program), and the program goes on after each.
 * Build: cc -g -O0 -o exec_fail exec_fail.c
 * Leaks 100 B in before_exec, tries execl, execlp, execle, execv, execvp, execve and execveat on
 * "./no-such-program" (each fails with ENOENT), then makes 10000 malloc/free pairs and leaks 200 B in
 * after_exec. Prints "failed 7" and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;
void *volatile sink;

__attribute__((noinline)) static void before_exec(void) { sink = malloc(100); }
__attribute__((noinline)) static void after_exec(void) { sink = malloc(200); }

int main(void) {
    const char *path = "./no-such-program";
    char *args[] = {(char *)path, NULL};
    before_exec();
    int failed = 0;
    failed += execl(path, path, (char *)NULL) < 0 && errno == ENOENT;
    failed += execlp(path, path, (char *)NULL) < 0 && errno == ENOENT;
    failed += execle(path, path, (char *)NULL, environ) < 0 && errno == ENOENT;
    failed += execv(path, args) < 0 && errno == ENOENT;
    failed += execvp(path, args) < 0 && errno == ENOENT;
    failed += execve(path, args, environ) < 0 && errno == ENOENT;
    failed += execveat(AT_FDCWD, path, args, environ, 0) < 0 && errno == ENOENT;
    for (int i = 0; i < 10000; i++)
        free(malloc(16 + i % 100));
    after_exec();
    printf("failed %d\n", failed);
    return 0;
}
