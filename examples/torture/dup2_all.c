/* dup2_all.c - dup2s its own file over every descriptor above stderr (3..1023).
 * Build: cc -g -O0 -o dup2_all dup2_all.c
 * Opens "data" and dup2s it over 3..1023; then 300000 malloc/free pairs and a leak of 1000 B in
 * after_dup_leak; writes "hello\n" through descriptor 3 only. Whatever writes through the other
 * descriptors lands in "data": the file must hold exactly "hello\n". Prints "data 6 ok".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void after_dup_leak(void) { sink = malloc(1000); }

int main(void) {
    int fd = open("data", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return 1;
    for (int i = 3; i < 1024; i++)
        if (i != fd)
            dup2(fd, i);
    for (int i = 0; i < 300000; i++) {
        char *p = malloc(16 + i % 300);
        p[0] = 1;
        free(p);
    }
    after_dup_leak();
    if (write(3, "hello\n", 6) != 6)
        return 1;
    char buf[4096];
    ssize_t n = pread(3, buf, sizeof buf, 0);
    printf("data %zd %s\n", n, n == 6 && memcmp(buf, "hello\n", 6) == 0 ? "ok" : "CHANGED");
    return 0;
}
