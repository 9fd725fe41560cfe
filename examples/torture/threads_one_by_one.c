/* threads_one_by_one.c - 300 threads, one after another, each leaking one block of 5000 B.
 * Build: cc -g -O0 -pthread -o threads_one_by_one threads_one_by_one.c
 * Each joined thread's stack is cached by glibc and reused by the next, which frees what glibc had
 * allocated for the previous one's thread-locals (a profiler's unwinder's among them, if it loaded
 * one with dlopen). Leaks 1500000 B in 300 blocks from one_by_one_leak. Prints "threads 300".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 300

static void *volatile keep[THREADS];

__attribute__((noinline)) static void one_by_one_leak(long i) {
    keep[i] = malloc(5000);
    memset(keep[i], 1, 5000);
}

static void *body(void *arg) {
    one_by_one_leak((long)arg);
    return NULL;
}

int main(void) {
    int n = 0;
    for (long i = 0; i < THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, body, (void *)i) != 0)
            return 1;
        pthread_join(t, NULL);
        n++;
    }
    printf("threads %d\n", n);
    return 0;
}
