/* main_thread_exit.c - main leaks, then calls pthread_exit while 4 threads go on allocating; the
 * process ends (status 0) when the last of them returns.
 * Build: cc -g -O0 -pthread -o main_thread_exit main_thread_exit.c
 * main leaks 500 B in main_leak; each thread makes 50000 malloc/free pairs and leaks 60 B in
 * worker_leak (4 blocks, 240 B); the last thread to finish prints "workers done 4".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;
static int done;

__attribute__((noinline)) static void main_leak(void) { sink = malloc(500); }
__attribute__((noinline)) static void worker_leak(void) { sink = malloc(60); }

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 50000; i++) {
        char *p = malloc(16 + i % 300);
        p[0] = 1;
        free(p);
    }
    worker_leak();
    if (__atomic_add_fetch(&done, 1, __ATOMIC_SEQ_CST) == 4) {
        printf("workers done 4\n");
        fflush(stdout);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return 1;
    main_leak();
    pthread_exit(NULL);
}
