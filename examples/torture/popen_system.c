/* popen_system.c - popen() and system(), which start /bin/sh from a program that allocates.
 * Build: cc -g -O0 -o popen_system popen_system.c
 * Reads "from the child" through popen("echo from the child"), then system("exit 3"). Leaks 222 B
 * in parent_leak. Prints "read: from the child", "pclose 0" and "system 3".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void *volatile sink;

__attribute__((noinline)) static void parent_leak(void) { sink = malloc(222); }

int main(void) {
    parent_leak();
    fflush(stdout);
    FILE *f = popen("echo from the child", "r");
    if (!f)
        return 1;
    char line[128] = {0};
    if (!fgets(line, sizeof line, f))
        return 1;
    int pc = pclose(f);
    printf("read: %s", line);
    printf("pclose %d\n", WIFEXITED(pc) ? WEXITSTATUS(pc) : -1);
    fflush(stdout);
    int st = system("exit 3");
    printf("system %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
