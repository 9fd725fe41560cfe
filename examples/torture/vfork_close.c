/* vfork_close.c - children that close every descriptor before they exec, as Python's subprocess
 * (vfork, then close_range before exec) and posix_spawn with a closefrom action do.
 * Build: cc -g -O0 -o vfork_close vfork_close.c
 * How, by argv[1]: vfork: vfork, then the raw close_range system call on 3..~0U and exec /bin/true;
 * spawn: posix_spawn of /bin/true with posix_spawn_file_actions_addclosefrom_np(3).
 * 6 children, one every 120 ms with 20000 malloc/free pairs between, then a leak of 777 B in
 * after_children_leak. A vfork child shares the parent's memory but has its own descriptors: none
 * of the parent's may be taken as released. Prints "children 6 ok 6" and "fds steady" when the
 * parent holds as many descriptors at the end as after the first child.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
void *volatile sink;

__attribute__((noinline)) static void after_children_leak(void) { sink = malloc(777); }

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static pid_t child(const char *how) {
    char *argv[] = {"true", NULL};
    if (strcmp(how, "spawn") == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        pid_t pid = -1;
        int rc = posix_spawn(&pid, "/bin/true", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        return rc == 0 ? pid : -1;
    }
    pid_t pid = vfork();
    if (pid == 0) {
        syscall(SYS_close_range, 3u, ~0u, 0u);
        execv("/bin/true", argv);
        _exit(127);
    }
    return pid;
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "vfork";
    int ok = 0, first = -1;
    for (int i = 0; i < 6; i++) {
        pid_t pid = child(how);
        int status = 0;
        if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0)
            ok++;
        for (int j = 0; j < 20000; j++) {
            char *p = malloc(16 + j % 300);
            p[0] = 1;
            free(p);
        }
        struct timespec nap = {0, 120 * 1000 * 1000};
        nanosleep(&nap, NULL);
        if (i == 0)
            first = open_fds();
    }
    after_children_leak();
    printf("children 6 ok %d\n", ok);
    printf(open_fds() == first ? "fds steady\n" : "fds grew from %d to %d\n", first, open_fds());
    return 0;
}
