/* static_hello.c - a statically linked program: no preloaded library can be loaded into it.
 * Build: cc -static -g -O0 -o static_hello static_hello.c
 * Leaks 10 B; prints "static hello" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

int main(void) {
    sink = malloc(10);
    printf("static hello\n");
    return 0;
}
