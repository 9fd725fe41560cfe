/* top_target.c - a running program for `memshim top`. Build: cc -g -O0 -o top_target top_target.c
 *
 * Keeps 3 blocks of 1,000,000 B from keep_big (line 18) and 10 blocks of 4,096 B from keep_small
 * (line 19), prints "top_target: ready", then waits until a file named `stop` appears in its
 * working directory (polling every 20 ms, allocating nothing), prints "top_target: done", frees
 * nothing and exits with status 7.
 *
 * While it waits, `memshim top` shows, exactly:
 *   live now by site  heap  3,000,000 B  3 blocks  keep_big (top_target.c:18)
 *                     heap     40,960 B 10 blocks  keep_small (top_target.c:19)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *kept[13];

__attribute__((noinline)) static void *keep_big(void) { return malloc(1000000); }
__attribute__((noinline)) static void *keep_small(void) { return malloc(4096); }

int main(void) {
    for (int i = 0; i < 3; i++)
        kept[i] = keep_big();
    for (int i = 3; i < 13; i++)
        kept[i] = keep_small();
    printf("top_target: ready\n");
    fflush(stdout);
    while (access("stop", F_OK) != 0)
        usleep(20000);
    printf("top_target: done\n");
    return 7;
}
