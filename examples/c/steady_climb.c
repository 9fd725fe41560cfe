/* steady_climb.c - two sites that climb one small block at a time for about half a second:
 * thousands of new highs each, far more than a site's high-water history keeps.
 * Build: cc -g -O1 -o steady_climb steady_climb.c
 * keep_record allocates 1000 B per step and every block is freed after the loop (5,000,000 B at
 * the peak, given back); keep_name allocates 48 B per step and none is freed (240,000 B, growing
 * until the end). Prints "steps 5000". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 5000

static void *records[STEPS];
void *volatile names[STEPS];

__attribute__((noinline)) static void keep_record(int i) {
    records[i] = malloc(1000);
    memset(records[i], i, 1000);
}

__attribute__((noinline)) static void keep_name(int i) { names[i] = malloc(48); }

int main(void) {
    for (int i = 0; i < STEPS; i++) {
        keep_record(i);
        keep_name(i);
        usleep(100);
    }
    for (int i = 0; i < STEPS; i++)
        free(records[i]);
    printf("steps %d\n", STEPS);
    return 0;
}
