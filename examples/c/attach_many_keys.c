/* attach_many_keys.c - a running program that has used up glibc's 32 inline thread-specific keys
 * (as PyTorch and the CUDA libraries do), for `memshim attach`. Build: cc -g -O0 -pthread.
 *
 * Creates 40 pthread keys, starts 3 threads that each allocate and free 256 B every millisecond,
 * prints "attach_many_keys: ready", then until a file named `stop` appears in its working
 * directory keeps one malloc(111) from keep_block every 20 ms. Then stops the threads, prints
 * "attach_many_keys: done" and exits with status 4.
 *
 * Attached for a while: the threads, already running at attach, are traced (their frees are
 * seen), keep_block holds exactly 111 B per turn while attached, and the program ends as it does
 * alone. (A shim whose per-thread state lived in a key past the first 32 recursed into calloc on
 * each thread's first hook and crashed the program.)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define KEYS 40
#define THREADS 3

static volatile int stopping;
static void *kept[1 << 20];

static void *churn(void *arg) {
    (void)arg;
    while (!stopping) {
        void *volatile p = malloc(256);
        free(p);
        usleep(1000);
    }
    return NULL;
}

__attribute__((noinline)) static void *keep_block(void) { return malloc(111); }

int main(void) {
    pthread_key_t keys[KEYS];
    for (int i = 0; i < KEYS; i++)
        if (pthread_key_create(&keys[i], NULL) != 0) return 1;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, churn, NULL) != 0) return 1;
    printf("attach_many_keys: ready\n");
    fflush(stdout);
    long n = 0;
    while (access("stop", F_OK) != 0 && n < (1 << 20)) {
        kept[n++] = keep_block();
        usleep(20000);
    }
    stopping = 1;
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("attach_many_keys: done\n");
    return 4;
}
