/* nofile.c - fopen with RLIMIT_NOFILE at 4: only descriptor 3 is free for the program.
 * Build: cc -g -O0 -o nofile nofile.c
 * With argv[1] "self" the program sets the limit (soft and hard 4) itself; otherwise its parent did
 * (prlimit --nofile=4:4). Then 100000 malloc/free pairs, leaks 64 B in nofile_leak, writes "data" with
 * fopen and reads it back. Prints "fopen ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

void *volatile sink;

__attribute__((noinline)) static void nofile_leak(void) { sink = malloc(64); }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "self") == 0) {
        struct rlimit r = {4, 4};
        if (setrlimit(RLIMIT_NOFILE, &r) != 0)
            return 1;
    }
    for (int i = 0; i < 100000; i++) {
        char *p = malloc(16 + i % 300);
        p[0] = 1;
        free(p);
    }
    nofile_leak();
    FILE *f = fopen("data", "w");
    if (!f) {
        perror("fopen for writing");
        return 1;
    }
    fputs("some data\n", f);
    fclose(f);
    f = fopen("data", "r");
    if (!f) {
        perror("fopen for reading");
        return 1;
    }
    char line[64];
    int ok = fgets(line, sizeof line, f) && strcmp(line, "some data\n") == 0;
    fclose(f);
    printf("fopen %s\n", ok ? "ok" : "read back something else");
    return 0;
}
