/* gate_leak.c - a program for the --fail-on gate: `gate_leak KIB STATUS`.
 * Build: cc -g -O0 -o gate_leak gate_leak.c
 *
 * Expected: `hold_buffer` (gate_leak.c:16) allocates KIB KiB in one block and never frees it;
 * nothing else of this file allocates. Prints nothing and exits with STATUS.
 */
#include <stdlib.h>
#include <string.h>

void *volatile kept;

__attribute__((noinline)) void hold_buffer(size_t bytes) {
    /* Touched, so the block is real memory, and kept in a global, so it is still reachable:
     * a leak by memshim's count (held at exit), as by valgrind's "in use at exit". */
    char *p;
    p = malloc(bytes);
    memset(p, 7, bytes);
    kept = p;
}

int main(int argc, char **argv) {
    if (argc != 3)
        return 64;
    hold_buffer((size_t)atol(argv[1]) * 1024);
    return atoi(argv[2]);
}
