/* attach_target.c - a running program for `memshim attach`. Build: cc -g -O0 -o attach_target attach_target.c
 *
 * Allocates 5000 blocks of 48 B at start, prints "attach_target: ready", then loops until a file
 * named `stop` appears in its working directory; each turn of the loop frees one of the early
 * blocks (while there are any), keeps one malloc(333) from keep_block, makes and frees one
 * malloc(4096) from scratch_block, and sleeps 20 ms. Prints "attach_target: done" and exits with
 * status 3.
 *
 * Attached for a while (and detached while it sleeps), `memshim report` shows, for the N turns
 * that ran while attached, exactly:
 *   leaks.host     keep_block  333 * N B in N blocks (N allocated there), nothing else
 *   heap           2N allocations, N frees (of the 4096 B blocks), N temporary,
 *                  N unknown frees (the early blocks, allocated before attach)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EARLY 5000

static void *early[EARLY];
static void *kept[1 << 20];

__attribute__((noinline)) static void *keep_block(void) { return malloc(333); }

__attribute__((noinline)) static void scratch_block(void) {
    void *volatile p = malloc(4096);
    free(p);
}

int main(void) {
    for (int i = 0; i < EARLY; i++)
        early[i] = malloc(48);
    printf("attach_target: ready\n");
    fflush(stdout);
    long n = 0;
    while (access("stop", F_OK) != 0 && n < (1 << 20)) {
        if (n < EARLY)
            free(early[n]);
        kept[n] = keep_block();
        scratch_block();
        n++;
        usleep(20000);
    }
    printf("attach_target: done\n");
    return 3;
}
