/* cancel.c - pthread_cancel of 8 threads that allocate and write in a loop (deferred
 * cancellation: the threads end at a cancellation point of theirs, or at one inside a hooked call).
 * Build: cc -g -O0 -pthread -o cancel cancel.c
 * Each thread leaks 40 B in thread_leak once before its loop (8 blocks, 320 B); the loop mallocs,
 * writes 1 byte to /dev/null, frees and calls pthread_testcancel. main cancels them after 50 ms and
 * joins them. Prints "cancelled 8".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *volatile sink;
static int devnull;

__attribute__((noinline)) static void thread_leak(void) { sink = malloc(40); }

static void *body(void *arg) {
    (void)arg;
    thread_leak();
    for (;;) {
        char *p = malloc(64);
        p[0] = 1;
        if (write(devnull, p, 1) < 0)
            break;
        free(p);
        pthread_testcancel();
    }
    return NULL;
}

int main(void) {
    devnull = open("/dev/null", O_WRONLY);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0)
            return 1;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int cancelled = 0;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_cancel(t[i]);
        if (pthread_join(t[i], &r) == 0 && r == PTHREAD_CANCELED)
            cancelled++;
    }
    printf("cancelled %d\n", cancelled);
    return 0;
}
