/* exec_target.c - the program exec.c execs. Build: cc -g -O0 -o exec_target exec_target.c
 *
 * Expected `memshim report` (leaks.host), sites from this file exactly:
 *   target_leak 444 B in 1 block
 * Exits with status 0 and prints nothing.
 */
#include <stdlib.h>
#include <string.h>

void *volatile sink;

__attribute__((noinline)) void target_leak(void) {
    char *p = malloc(444);
    memset(p, 't', 444);
    sink = p;
}

int main(void) {
    target_leak();
    return 0;
}
