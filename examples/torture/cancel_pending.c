/* cancel_pending.c - a thread allocates from new call paths while a pthread_cancel is already pending
 * (deferred cancellation), so any cancellation point inside a hooked call would act there.
 * Build: cc -g -O0 -pthread -o cancel_pending cancel_pending.c
 * 20 threads, one after another. Each turns cancellation off, main cancels it, it turns cancellation
 * back on (the cancel stays pending: none of its calls is a cancellation point until the last), leaks
 * 24 B in pending_leak, makes 1000 allocations from two call paths and frees them, then acts on the
 * cancel at pthread_testcancel. Leaks 480 B in 20 blocks. Prints "cancelled 20".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;
static pthread_barrier_t bar;

__attribute__((noinline)) static void pending_leak(void) { sink = malloc(24); }

__attribute__((noinline)) static void leaf(int i) {
    sink = malloc(16 + i % 64);
    free(sink);
}

__attribute__((noinline)) static void mid(int i) {
    if (i & 1)
        leaf(i);
    else
        leaf(i + 1);
}

static void *body(void *arg) {
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_barrier_wait(&bar);
    /* main cancels here */
    pthread_barrier_wait(&bar);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    pending_leak();
    for (int i = 0; i < 1000; i++)
        mid(i);
    pthread_testcancel();
    return NULL;
}

int main(void) {
    int cancelled = 0;
    for (int k = 0; k < 20; k++) {
        pthread_t t;
        void *r;
        pthread_barrier_init(&bar, NULL, 2);
        if (pthread_create(&t, NULL, body, NULL) != 0)
            return 1;
        pthread_barrier_wait(&bar);
        pthread_cancel(t);
        pthread_barrier_wait(&bar);
        if (pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED)
            cancelled++;
        pthread_barrier_destroy(&bar);
    }
    printf("cancelled %d\n", cancelled);
    return 0;
}
