/* alloc_threads.c - 4 threads allocate and free; built plain, with -ljemalloc and with -ltcmalloc.
 * Build: cc -g -O0 -pthread -o alloc_threads alloc_threads.c [-ljemalloc | -ltcmalloc]
 * Each thread makes 20000 malloc/free pairs and leaks 250 B in worker_leak (4 blocks, 1000 B);
 * main leaks 2000 B in main_leak. Prints "workers 4".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

__attribute__((noinline)) static void worker_leak(void) { sink = malloc(250); }
__attribute__((noinline)) static void main_leak(void) { sink = malloc(2000); }

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        char *p = malloc(16 + i % 1000);
        p[0] = 1;
        free(p);
    }
    worker_leak();
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    main_leak();
    printf("workers 4\n");
    return 0;
}
