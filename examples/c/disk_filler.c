/* disk_filler.c - enough allocation traffic, hard enough to compress, to fill a small disk with its
 * trace: 500,000 allocations of pseudo-random sizes (16-4111 B) replacing a random slot of a ring
 * of 4096 live blocks, then every ring block freed and 5 blocks of 1000 B kept in last_leak.
 * Build: cc -g -O0 -o disk_filler disk_filler.c
 * Prints "disk_filler: done" and exits 0. Its trace is several MiB (the tests give it less).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 4096
static void *ring[RING];
void *volatile keep[5];

static uint64_t state = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

__attribute__((noinline)) static void churn(void) {
    for (int i = 0; i < 500000; i++) {
        uint64_t r = next();
        size_t slot = r % RING;
        free(ring[slot]);
        ring[slot] = malloc(16 + (r >> 20) % 4096);
    }
    for (int i = 0; i < RING; i++) {
        free(ring[i]);
        ring[i] = NULL;
    }
}

__attribute__((noinline)) static void last_leak(void) {
    for (int i = 0; i < 5; i++)
        keep[i] = malloc(1000);
}

int main(void) {
    churn();
    last_leak();
    printf("disk_filler: done\n");
    return 0;
}
