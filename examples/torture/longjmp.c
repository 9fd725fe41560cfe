/* longjmp.c - longjmp out of 100 nested frames that each allocate, 50 times.
 * Build: cc -g -O0 -o longjmp longjmp.c
 * Each frame mallocs 48 B in frame_alloc and never frees it (the longjmp skips the frees):
 * 50 * 100 = 5000 blocks, 240000 B leaked in frame_alloc. Prints "jumps 50".
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf env;
void *volatile sink;

__attribute__((noinline)) static void *frame_alloc(void) { return malloc(48); }

__attribute__((noinline)) static void dive(int depth) {
    char *p = frame_alloc();
    p[0] = (char)depth;
    sink = p;
    if (depth == 100)
        longjmp(env, 1);
    dive(depth + 1);
    free(p);
}

int main(void) {
    int jumps = 0;
    for (int i = 0; i < 50; i++) {
        if (setjmp(env) == 0)
            dive(1);
        else
            jumps++;
    }
    printf("jumps %d\n", jumps);
    return 0;
}
