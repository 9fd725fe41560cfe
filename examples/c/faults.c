/* faults.c: page faults at a steady pace for about 1.5 s: every 20 ms it maps 1 MiB of anonymous
 * memory, writes each page (one minor fault per 4 KiB page) and unmaps it again.
 * Expected report: counters.series holds page_faults_minor with a reading about every second (at
 * least two over the run), each above the one before, the last no more than the end value.
 * Prints "faults: ok" and exits 0.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CHUNK (1 << 20)

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(void) {
    long long until = now_ms() + 1500;
    struct timespec pause = {0, 20 * 1000 * 1000};
    while (now_ms() < until) {
        char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        /* No huge page: one fault per small page. */
        madvise(p, CHUNK, MADV_NOHUGEPAGE);
        for (int i = 0; i < CHUNK; i += 4096) p[i] = (char)i;
        munmap(p, CHUNK);
        nanosleep(&pause, NULL);
    }
    printf("faults: ok\n");
    return 0;
}
