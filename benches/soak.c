/* soak.c - THREADS threads allocate and free as fast as they can for SECONDS seconds, each keeping a
 * ring of 1024 live blocks of 16-1039 B (a bounded live set): whatever memory the process gains over
 * the run is the profiler's own. Prints the allocations made.
 * Build: cc -O2 -pthread -o soak soak.c    Run: ./soak THREADS SECONDS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RING 1024
static double seconds;
static _Atomic unsigned long long total;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void *work(void *arg) {
    uint64_t s = 0x9e3779b97f4a7c15u ^ (uintptr_t)arg;
    void *ring[RING] = {0};
    unsigned long long n = 0;
    double end = now() + seconds;
    while (1) {
        for (int i = 0; i < 4096; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            size_t slot = s % RING;
            free(ring[slot]);
            ring[slot] = malloc(16 + (s >> 32) % 1024);
        }
        n += 4096;
        if (now() >= end)
            break;
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    total += n;
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    seconds = argc > 2 ? atof(argv[2]) : 10;
    pthread_t t[64];
    if (threads < 1 || threads > 64)
        return 2;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("soak: %llu allocations\n", (unsigned long long)total);
    return 0;
}
