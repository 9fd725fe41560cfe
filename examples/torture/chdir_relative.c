/* chdir_relative.c - changes into a directory of its own, then forks a child that allocates and exits.
 * Build: cc -g -O0 -o chdir_relative chdir_relative.c
 * Run with a relative MEMSHIM_OUTPUT (e.g. "traces"): the traces belong where that name pointed when
 * the program started, and nothing may appear inside the program's new working directory "work".
 * The child leaks 200 B in child_leak and exits 0; the parent leaks 100 B in parent_leak and prints
 * "work holds 0 entries" (counted after the child ended).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void parent_leak(void) { sink = malloc(100); }
__attribute__((noinline)) static void child_leak(void) { sink = malloc(200); }

int main(void) {
    mkdir("work", 0700);
    if (chdir("work") != 0)
        return 1;
    parent_leak();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 1000; i++)
            free(malloc(32));
        child_leak();
        exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    int n = 0;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    if (d)
        closedir(d);
    printf("work holds %d entries\n", n);
    return 0;
}
