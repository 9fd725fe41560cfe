/* threads.c - four threads leak from the same start routine.
 * Build: cc -g -O0 -pthread -o threads threads.c
 *
 * Expected `memshim report` (leaks.host), sites from this file's functions, exactly one:
 *   thread_leak  40000 B in 40 blocks (each of 4 threads: 10 x malloc(1000) from one call
 *                site; the stacks are identical: thread_leak <- start_thread <- clone3)
 * Exits with status 0 and prints nothing.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4

void *volatile sink[THREADS];

__attribute__((noinline)) void *thread_leak(void *arg) {
    long idx = (long)arg;
    for (int i = 0; i < 10; i++) {
        char *p = malloc(1000);
        memset(p, (int)idx, 1000);
        sink[idx] = p;
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, thread_leak, (void *)i) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return 0;
}
