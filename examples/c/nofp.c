/* nofp.c - a leak three calls deep, built without frame pointers.
 * Build: cc -O2 -fomit-frame-pointer -g -o nofp nofp.c
 *
 * Expected `memshim report` (leaks.host): exactly one site from this file's functions:
 *   inner_leak 539 B in 7 blocks (7 x malloc(77)); its frames contain, in this order
 *   (innermost first): inner_leak, middle, outer, main.
 * noipa keeps GCC from inlining, cloning or otherwise merging the functions; the volatile
 * stores after each call keep them from being tail calls. Exits with status 0, prints nothing.
 */
#include <stdlib.h>
#include <string.h>

void *volatile sink[7];
volatile int depth_marker;

__attribute__((noipa)) void inner_leak(int n) {
    for (int i = 0; i < n; i++) {
        char *p = malloc(77);
        memset(p, i, 77);
        sink[i] = p;
    }
    depth_marker = 3;
}

__attribute__((noipa)) void middle(int n) {
    inner_leak(n);
    depth_marker = 2;
}

__attribute__((noipa)) void outer(int n) {
    middle(n);
    depth_marker = 1;
}

int main(void) {
    outer(7);
    depth_marker = 0;
    return 0;
}
