/* close_all.c - closes every descriptor above stderr, then opens 8 files of its own.
 * Build: cc -g -O0 -o close_all close_all.c
 * How, by argv[1]: none: close() on 3..1023; closefrom: closefrom(3); close_range: the raw
 * close_range system call on 3..~0U.
 * The files f0..f7 (in the working directory) get descriptors 3..10. Then 300000 malloc/free pairs
 * and a leak of 1000 B in after_close_leak; then each descriptor must still be its own file (same
 * inode) and take a write. Prints "fds 3 4 5 6 7 8 9 10" and "files ok 8".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void after_close_leak(void) { sink = malloc(1000); }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "closefrom") == 0)
        closefrom(3);
    else if (argc > 1 && strcmp(argv[1], "close_range") == 0)
        syscall(SYS_close_range, 3u, ~0u, 0u);
    else
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    int fds[8];
    char name[8];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "f%d", i);
        fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    }
    for (int i = 0; i < 300000; i++) {
        char *p = malloc(16 + i % 300);
        p[0] = 1;
        free(p);
    }
    after_close_leak();
    int ok = 0;
    for (int i = 0; i < 8; i++) {
        struct stat a, b;
        snprintf(name, sizeof name, "f%d", i);
        if (fstat(fds[i], &a) == 0 && stat(name, &b) == 0 && a.st_ino == b.st_ino &&
            write(fds[i], "x", 1) == 1)
            ok++;
    }
    printf("fds");
    for (int i = 0; i < 8; i++)
        printf(" %d", fds[i]);
    printf("\nfiles ok %d\n", ok);
    return 0;
}
