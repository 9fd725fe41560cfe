/* quick_exit.c - at_quick_exit handlers that allocate, then quick_exit(5) from main.
 * Build: cc -g -O0 -o quick_exit quick_exit.c
 * The handler frees the 1000 blocks of 24 B make_blocks made and leaks 77 B in handler_leak; atexit
 * handlers do not run. Prints "quick" and "handler ran"; exit status 5.
 */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;
static void *blocks[1000];

__attribute__((noinline)) static void make_blocks(void) {
    for (int i = 0; i < 1000; i++)
        blocks[i] = malloc(24);
}
__attribute__((noinline)) static void handler_leak(void) { sink = malloc(77); }

static void on_quick_exit(void) {
    for (int i = 0; i < 1000; i++)
        free(blocks[i]);
    handler_leak();
    printf("handler ran\n");
    fflush(stdout);
}

static void on_exit_never(void) { printf("atexit ran (it must not)\n"); }

int main(void) {
    make_blocks();
    at_quick_exit(on_quick_exit);
    atexit(on_exit_never);
    printf("quick\n");
    fflush(stdout);
    quick_exit(5);
}
