/* phases.c - allocations in three phases 300 ms apart, for `memshim report --since/--until`.
 *
 *   at ~0.0 s  phase_one:   malloc 100000 (kept to the end)
 *   at ~0.3 s  phase_two:   malloc 200000 (kept), then phase_one's block is freed
 *   at ~0.6 s  phase_three: malloc 300000 (kept)
 *
 * Expected leak sites from this file's functions:
 *   whole run:             phase_two 200000, phase_three 300000 (phase_one's block was freed)
 *   --until 0.15:          phase_one 100000 (still held at 0.15 s)
 *   --since 0.45:          phase_three 300000 only
 * Prints "done"; exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) void *phase_one(void) { return malloc(100000); }
__attribute__((noinline)) void *phase_two(void) { return malloc(200000); }
__attribute__((noinline)) void *phase_three(void) { return malloc(300000); }

int main(void) {
    void *a = phase_one();
    pause_ms(300);
    void *b = phase_two();
    free(a);
    pause_ms(300);
    void *c = phase_three();
    printf("done\n");
    return (b && c) ? 0 : 1;
}
