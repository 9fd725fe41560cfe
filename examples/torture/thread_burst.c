/* thread_burst.c - bursts of short-lived threads, then detached threads still allocating at exit.
 * Build: cc -g -O0 -pthread -o thread_burst thread_burst.c
 * 8 bursts of 16 joined threads; each thread makes 2000 malloc/free pairs and leaks 100 B in
 * thread_leak (128 blocks, 12800 B). Then 4 detached threads allocate and free in a loop until the
 * process exits; main leaks 1234 B in main_leak and returns 0.
 * Prints "bursts 8 threads 128".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink;

__attribute__((noinline)) static void thread_leak(void) { sink = malloc(100); }
__attribute__((noinline)) static void main_leak(void) { sink = malloc(1234); }

static void *burst(void *arg) {
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        char *p = malloc(16 + i % 512);
        p[0] = 1;
        free(p);
    }
    thread_leak();
    return NULL;
}

static void *forever(void *arg) {
    (void)arg;
    for (;;) {
        char *p = malloc(64);
        p[0] = 1;
        free(p);
    }
    return NULL;
}

int main(void) {
    int n = 0;
    for (int b = 0; b < 8; b++) {
        pthread_t t[16];
        for (int i = 0; i < 16; i++)
            if (pthread_create(&t[i], NULL, burst, NULL) != 0)
                return 1;
        for (int i = 0; i < 16; i++, n++)
            pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 4; i++) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, forever, NULL) != 0)
            return 1;
    }
    main_leak();
    printf("bursts 8 threads %d\n", n);
    return 0;
}
