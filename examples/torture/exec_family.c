/* exec_family.c - leaks, then replaces itself with argv[2] (alloc_many) through the call argv[1] names.
 * Build: cc -g -O0 -o exec_family exec_family.c
 * Calls: execl execlp execle execv execvp execve execveat. Leaks 333 B in before_exec, prints
 * "exec CALL" (flushed), then execs; alloc_many then prints "alloc_many 2" (it gets one extra argument,
 * "x") and leaks 444 B in target_leak. execlp/execvp are given the file name only, with PATH set to
 * the program's directory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
void *volatile sink;

__attribute__((noinline)) static void before_exec(void) { sink = malloc(333); }

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CALL /path/to/alloc_many\n", argv[0]);
        return 2;
    }
    const char *call = argv[1], *path = argv[2];
    char dirbuf[4096], basebuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    snprintf(basebuf, sizeof basebuf, "%s", path);
    char *dir = dirname(dirbuf), *base = basename(basebuf);
    before_exec();
    printf("exec %s\n", call);
    fflush(stdout);
    char *args[] = {(char *)path, "x", NULL};
    if (strcmp(call, "execl") == 0) {
        execl(path, path, "x", (char *)NULL);
    } else if (strcmp(call, "execlp") == 0) {
        setenv("PATH", dir, 1);
        execlp(base, base, "x", (char *)NULL);
    } else if (strcmp(call, "execle") == 0) {
        execle(path, path, "x", (char *)NULL, environ);
    } else if (strcmp(call, "execv") == 0) {
        execv(path, args);
    } else if (strcmp(call, "execvp") == 0) {
        setenv("PATH", dir, 1);
        args[0] = base;
        execvp(base, args);
    } else if (strcmp(call, "execve") == 0) {
        execve(path, args, environ);
    } else if (strcmp(call, "execveat") == 0) {
        int fd = open(dir, O_PATH | O_DIRECTORY);
        execveat(fd, base, args, environ, 0);
    } else {
        return 2;
    }
    perror("exec");
    return 127;
}
