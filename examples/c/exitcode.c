/* exitcode.c - checks that the shim leaves output and exit status alone.
 * Build: cc -g -O0 -o exitcode exitcode.c
 *
 * Expected: stdout is exactly "hello from exitcode\n", stderr exactly "err line\n", exit
 * status 3 - byte-identical with and without memshim. No leak site names a function of
 * this file other than main (stdio's own buffers may show up under main).
 */
#include <stdio.h>

int main(void) {
    printf("hello from exitcode\n");
    fflush(stdout);
    fprintf(stderr, "err line\n");
    return 3;
}
